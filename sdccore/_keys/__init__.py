"""Categorical key variables (quasi-identifiers such as region, sex, age): their identity
risk, as sdcMicro measures it (``frequencies``: fk, Fk with a missing value matching every
value; ``risk``: individual risk, expected re-identifications, k-anonymity, household risk).

Imports nothing: each module is imported by its full name."""
