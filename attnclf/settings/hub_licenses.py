"""The license identifiers a Hugging Face Hub card's `license:` takes: the table of the Hub's documentation
(https://huggingface.co/docs/hub/repositories-licenses, read 2026-12-07), which huggingface_hub does not ship.
`attnclf export license=ID` is checked against it."""

from __future__ import annotations

import difflib

from attnclf.errors import AttnclfError

HUB_LICENSES = (
    "apache-2.0 mit openrail bigscience-openrail-m creativeml-openrail-m bigscience-bloom-rail-1.0 "
    "bigcode-openrail-m afl-3.0 artistic-2.0 bsl-1.0 bsd bsd-2-clause bsd-3-clause bsd-3-clause-clear c-uda cc "
    "cc0-1.0 cc-by-2.0 cc-by-2.5 cc-by-3.0 cc-by-4.0 cc-by-sa-3.0 cc-by-sa-4.0 cc-by-nc-2.0 cc-by-nc-3.0 "
    "cc-by-nc-4.0 cc-by-nd-4.0 cc-by-nc-nd-3.0 cc-by-nc-nd-4.0 cc-by-nc-sa-2.0 cc-by-nc-sa-3.0 cc-by-nc-sa-4.0 "
    "cdla-sharing-1.0 cdla-permissive-1.0 cdla-permissive-2.0 wtfpl ecl-2.0 epl-1.0 epl-2.0 etalab-2.0 eupl-1.1 "
    "agpl-3.0 gfdl gpl gpl-2.0 gpl-3.0 lgpl lgpl-2.1 lgpl-3.0 isc lppl-1.3c ms-pl mpl-2.0 odc-by odbl openrail++ "
    "osl-3.0 postgresql ofl-1.1 ncsa unlicense zlib pddl lgpl-lr deepfloyd-if-license llama2 gemma unknown other"
).split()


def check_license(license: str) -> None:
    """One line for an identifier the Hub does not know, naming the closest it does."""
    if license in HUB_LICENSES:
        return
    close = difflib.get_close_matches(license.lower(), HUB_LICENSES, n=3, cutoff=0.5)
    closest = f"closest: {', '.join(close)}; " if close else ""
    raise AttnclfError(
        f"license={license[:60]!r} is not a license identifier of the Hugging Face Hub ({closest}e.g. mit, "
        "apache-2.0, cc-by-4.0; the whole list: https://huggingface.co/docs/hub/repositories-licenses)"
    )
