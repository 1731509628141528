"""The contracts: Avro schemas of every record type, the codec, and the API's input models.

The Avro full name (``hindbrain.Perception`` ...) is the wire identity of a record type;
Python class names never reach the wire, so renaming code never breaks old records.
"""

from hindbrain.schemas.codec import CodecError, Registry, registry

__all__ = ["CodecError", "Registry", "registry"]
