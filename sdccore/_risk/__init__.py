"""Disclosure risk: the risk floors and their profiles, linkage, the intruders, the fixes' words.

Imports nothing: each module is imported by its full name."""
