#!/bin/sh
# git's askpass program for a push or ls-remote to the fork over HTTPS (backport/forge/token.py).
# A read-only file of the installed package: it holds no secret; the token is in the
# environment of the one git process that runs it.
case "$1" in
  [Uu]sername*) printf '%s\n' "${BACKPORT_ASKPASS_USER:-oauth2}" ;;
  *) printf '%s\n' "$BACKPORT_ASKPASS_TOKEN" ;;
esac
