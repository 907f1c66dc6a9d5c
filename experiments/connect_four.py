"""Connect Four (6x7): the default experiment, sized to improve visibly within 15 minutes on a
2-core CPU. One iteration (128 games x 16 plies x 32 simulations, 8 updates of 256) takes
about N s here."""

from azjax.config import base_config


def get_config():
    config = base_config()
    config.name = "connect_four"
    config.game = "connect_four"
    return config
