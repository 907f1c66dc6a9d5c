"""The AlphaZero pipeline as pure functions: networks, search, self-play, replay, the learner
and the step functions that join them. No config, no files, no `jax.jit`: the drivers in
`azjax.training` build these from plain arguments and transform them."""
