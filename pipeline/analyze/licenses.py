"""License clarity (seed 000): a known SPDX license 100, identified but non-standard 70, custom 40, none 0.

A license is known when its SPDX id is declared, when its declared name is a standard license's name ("MIT License"),
when the LICENSE file's text is a standard license's text, or when the repository host identified it. Texts are
recognised by the sentences each standard license is built on, never by its title line alone.
"""

from __future__ import annotations

import re
from typing import Any

SPDX_IDS = {
    "mit", "apache-2.0", "bsd-2-clause", "bsd-3-clause", "isc", "mpl-2.0", "gpl-2.0", "gpl-3.0",
    "gpl-2.0-only", "gpl-3.0-only", "gpl-2.0-or-later", "gpl-3.0-or-later", "lgpl-2.1", "lgpl-3.0",
    "lgpl-2.1-only", "lgpl-3.0-only", "lgpl-2.1-or-later", "lgpl-3.0-or-later", "agpl-3.0", "agpl-3.0-only",
    "agpl-3.0-or-later", "unlicense", "cc0-1.0", "0bsd", "epl-2.0", "zlib", "bsl-1.0", "artistic-2.0", "mit-0", "upl-1.0",
    "cc-by-4.0", "python-2.0", "psf-2.0", "wtfpl", "blueoak-1.0.0",
}
# Standard licenses by the names manifests and classifiers give them.
STANDARD_NAMES = {
    "mit license": "MIT", "the mit license": "MIT", "mit licence": "MIT", "apache license 2.0": "Apache-2.0",
    "apache license, version 2.0": "Apache-2.0", "apache 2.0": "Apache-2.0", "apache-2": "Apache-2.0", "apache 2": "Apache-2.0",
    "apache software license": "Apache-2.0", "apache license": "Apache-2.0", "bsd-3": "BSD-3-Clause", "new bsd license": "BSD-3-Clause",
    "simplified bsd license": "BSD-2-Clause", "isc license": "ISC", "isc license (iscl)": "ISC",
    "gnu general public license v3 (gplv3)": "GPL-3.0", "gnu general public license v2 (gplv2)": "GPL-2.0",
    "gnu general public license v3 or later (gplv3+)": "GPL-3.0-or-later", "gnu affero general public license v3": "AGPL-3.0",
    "gnu lesser general public license v3 (lgplv3)": "LGPL-3.0", "gnu lesser general public license v2 (lgplv2)": "LGPL-2.1",
    "mozilla public license 2.0 (mpl 2.0)": "MPL-2.0", "the unlicense (unlicense)": "Unlicense", "gplv3": "GPL-3.0", "gpl-3": "GPL-3.0",
    "gpl v3": "GPL-3.0", "gpl v2": "GPL-2.0", "agplv3": "AGPL-3.0",
}
# (SPDX id, sentences that must all appear), most specific first; matched on the text with whitespace collapsed, lower case.
TEXTS = (
    ("AGPL-3.0", ("gnu affero general public license", "version 3")),
    ("LGPL-3.0", ("gnu lesser general public license", "version 3")),
    ("LGPL-2.1", ("gnu lesser general public license", "version 2.1")),
    ("GPL-3.0", ("gnu general public license", "version 3")),
    ("GPL-2.0", ("gnu general public license", "version 2")),
    ("Apache-2.0", ("apache license", "version 2.0")),
    ("MPL-2.0", ("mozilla public license", "2.0")),
    ("EPL-2.0", ("eclipse public license", "2.0")),
    ("BSL-1.0", ("boost software license - version 1.0",)),
    ("Unlicense", ("this is free and unencumbered software released into the public domain",)),
    ("CC0-1.0", ("cc0 1.0 universal",)),
    ("MIT-0", ("permission is hereby granted, free of charge, to any person obtaining a copy", "without restriction",
               "the software is provided \"as is\"", "without attribution")),
    ("MIT", ("permission is hereby granted, free of charge, to any person obtaining a copy",
             "the above copyright notice and this permission notice shall be included")),
    ("ISC", ("permission to use, copy, modify, and/or distribute this software for any purpose with or without fee is hereby granted",
             "provided that the above copyright notice and this permission notice appear in all copies")),
    ("ISC", ("permission to use, copy, modify, and distribute this software for any purpose with or without fee is hereby granted",
             "provided that the above copyright notice and this permission notice appear in all copies")),
    ("0BSD", ("permission to use, copy, modify, and/or distribute this software for any purpose with or without fee is hereby granted",)),
    ("BSD-3-Clause", ("redistribution and use in source and binary forms", "neither the name")),
    ("BSD-2-Clause", ("redistribution and use in source and binary forms", "redistributions in binary form must reproduce")),
    ("Zlib", ("this software is provided 'as-is', without any express or implied warranty", "altered source versions must be plainly marked")),
)
MAX_LICENSE_TEXT = 40_000  # characters of a LICENSE file read: every standard text states its terms well before this


def license_from_text(text: str | None) -> str | None:
    """The SPDX id of a standard license text, or None when the text is not one we know."""
    if not text:
        return None
    flat = re.sub(r"\s+", " ", text[:MAX_LICENSE_TEXT]).lower().replace("“", '"').replace("”", '"')
    for spdx, sentences in TEXTS:
        if all(sentence in flat for sentence in sentences):
            return spdx
    return None


def is_spdx(expression: str) -> bool:
    """An SPDX id or an expression of ids (MIT OR Apache-2.0, GPL-2.0-only WITH Classpath-exception-2.0)."""
    parts = [p.strip() for p in re.split(r"\s+(?:OR|AND|WITH)\s+|[()]", expression) if p.strip()]
    return bool(parts) and all(part.lower() in SPDX_IDS or part.lower().endswith(("-exception", "-exception-2.0")) for part in parts)


def license_clarity(declared: object, classifiers: list[str], text: str | None, host_spdx: str | None) -> dict[str, Any]:
    """Seed 000's license clarity from what the manifest declares, the LICENSE text and what the host detected."""
    if isinstance(declared, dict):  # the old package.json form {"type": "MIT", "url": …}
        declared = declared.get("type")
    declared = declared.strip() if isinstance(declared, str) else ""
    named = STANDARD_NAMES.get(declared.lower()) or _from_classifiers(classifiers)
    from_text = license_from_text(text)
    host = host_spdx if host_spdx and host_spdx.lower() in SPDX_IDS else None
    if declared and is_spdx(declared):
        return {"value": 100, "license": declared, "kind": "spdx", "source": "manifest"}
    if named and not (declared and declared.upper().startswith("SEE LICENSE IN")):
        return {"value": 100, "license": named, "kind": "spdx", "source": "manifest name"}
    if from_text:
        return {"value": 100, "license": from_text, "kind": "spdx", "source": "license text"}
    if host:
        return {"value": 100, "license": host_spdx, "kind": "spdx", "source": "repository host"}
    if declared.upper().startswith("SEE LICENSE IN") or len(declared) > 40 or text:
        return {"value": 40, "license": (declared or "custom")[:80], "kind": "custom", "source": "license text" if text else "manifest"}
    if declared:
        return {"value": 70, "license": declared[:80], "kind": "named", "source": "manifest"}
    return {"value": 0, "license": None, "kind": "none", "source": None}


def _from_classifiers(classifiers: list[str]) -> str | None:
    for classifier in classifiers:
        if classifier.startswith("License :: "):
            name = classifier.rsplit("::", 1)[1].strip().lower()
            if name in STANDARD_NAMES:
                return STANDARD_NAMES[name]
            if name in SPDX_IDS:
                return classifier.rsplit("::", 1)[1].strip()
    return None
