"""The static site over every committed release of a warehouse (``kitab site build``,
docs/site.md): data.py reads, differences.py computes the between-release differences,
pages.py renders, build.py writes. The cycle calls :func:`build_site`."""

from kitab.release.site.build import build_site

__all__ = ["build_site"]
