"""A page of the Ascend docs as the docs audit reads it (shared by the docs-audit tests)."""

API = "torch.distributed.elastic.metrics.put_metric"

# One version's page: the API's entry with its support table, then later tables of other entries.
LISTED_PLAIN = f"""# torch.distributed.elastic

## Metrics

### torch.distributed.elastic.metrics.configure

**支持情况**：

| 硬件 | 是否支持 |
| ---- | :----: |
| <term>Board One</term> | ✘ |

### {API}

<div style="margin-left: 2em">

**原生文档**：[{API}](https://example.invalid/put_metric)

**支持情况**：

| 硬件 | 是否支持 |
| ---- | :----: |
| <term>Board One</term> | ✔ |
| <term>Board Two</term> | ✔ |
| <term>Board Three</term> | ✘ |

**限制与说明**：only integer values were tried

</div>

## Events

| 硬件 | 是否支持 |
| ---- | :----: |
| <term>Board Three</term> | ✔ |
"""
