"""Speaking to people and other software: GTP engine (`gtp`) and SGF records (`sgf`) for Go,
and a game against an agent in the terminal (`terminal`)."""
