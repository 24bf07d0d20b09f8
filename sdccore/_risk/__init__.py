"""Disclosure risk: the intruders' registry and the battery, the risk floors and their profiles, linkage, the fixes' words.

Imports nothing: each module is imported by its full name."""
