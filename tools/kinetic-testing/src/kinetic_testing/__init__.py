"""Test infrastructure for Kinetic's test tiers. Not published; never imported by a package."""
