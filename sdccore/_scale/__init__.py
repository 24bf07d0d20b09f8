"""The Dask engine's runtime (files beyond one machine's memory): the engine that sequences a release at scale, the pipeline's steps there, the floors and the measures over every partition. The methods' own forms at scale live in _methods, the reading and writing of partitions in _io.partitions.

Imports nothing: each module is imported by its full name."""
