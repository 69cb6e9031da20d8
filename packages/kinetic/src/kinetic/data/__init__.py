"""``kinetic.Data`` and what the client does with it: hash, upload, and plan a call's data."""

from kinetic.data.reference import Data

__all__ = ["Data"]
