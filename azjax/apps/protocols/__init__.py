"""Speaking to people and other software: GTP engine (`gtp`) and SGF records (`sgf`) for Go,
UCI engine (`uci`) for Xiangqi, and a game against an agent in the terminal (`terminal`).
Outside engines that azjax plays against are `azjax.matches.engines`."""
