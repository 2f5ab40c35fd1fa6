"""The snapshot format the sources read: WikiData and Open Library in their own public
formats (``format``), the Open Library index over the dump files (``olindex``) and the
manifest (``manifest``). The generator that writes snapshots lives in kitab.simulate."""
