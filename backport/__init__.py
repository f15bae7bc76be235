"""backport: land one API's test patch on every torch-npu release branch, validated per branch."""

__version__ = "0.1.0"
