"""The simulated world: the seeded snapshot generator (``generator``) and the local mirror
that serves a snapshot with WikiData's and Open Library's HTTP APIs (``mirror``). The demo
and the tests use them; so can users. Imports kitab.core and kitab.sources only."""
