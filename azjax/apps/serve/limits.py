"""The web board's limits, shared by the server (`serve/__init__.py`) and its HTTP API
(`app.py`)."""

SIMULATION_CHOICES = (16, 64, 200, 800)  # offered besides the run's own setting
REQUEST_TIMEOUT = 5.0  # seconds for a request's head, and then for its body (`app.py`)
