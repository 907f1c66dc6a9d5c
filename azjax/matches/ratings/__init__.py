"""Ratings: maximum-likelihood Elo of many players from their games (`elo.fit`)."""

from azjax.matches.ratings.elo import Ratings, fit

__all__ = ["Ratings", "fit"]
