"""The services a refresh reads, as one object: the clients a source kind opens
(kitab/sources/kinds/), one per service, each behind its service's small protocol
(:class:`kitab.sources.wikidata.Wikidata`, :class:`kitab.sources.openlibrary.OpenLibrary`)."""

from __future__ import annotations

from dataclasses import dataclass

from kitab.sources.openlibrary import OpenLibrary
from kitab.sources.wikidata import Wikidata


@dataclass
class Sources:
    kind: str
    wikidata: Wikidata
    openlibrary: OpenLibrary

    def services(self) -> dict[str, Wikidata | OpenLibrary]:
        """Each service's client by the name a person reads (the progress shows each one's requests)."""
        return {"WikiData": self.wikidata, "Open Library": self.openlibrary}

    def requests_sent(self) -> int:
        return sum(client.counter.sent for client in self.services().values())

    def requests_sent_by_this_thread(self) -> int:
        return sum(client.counter.sent_by_this_thread() for client in self.services().values())

    def close(self) -> None:
        for client in self.services().values():
            client.close()
