"""Exchange with other Go software: the GTP engine (`gtp`) and SGF game records (`sgf`)."""
