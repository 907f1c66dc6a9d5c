"""The experiments shipped with azjax: one file per experiment, each with `get_config()`
(`azjax train --config NAME`). The wheel installs this folder as `azjax.experiments`."""
