"""XML that physai parses itself (URDF) cannot explode or read other files: DTDs, entities and external references are refused.

The timing bound is deliberately loose (1 s where the refusal takes milliseconds): it only catches a parser that
expands the entities (the billion laughs expand to 3 GB, the 2 MB entity used 95 times to 190 MB) before refusing.
"""

import time

import numpy as np
import pytest

from physai.exceptions import InvalidModelError
from physai.urdf import tree_from_urdf

ROBOT = '<link name="base"/><link name="arm"/><joint name="j" type="revolute"><parent link="base"/><child link="arm"/></joint>'

BILLION_LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE robot [
  <!ENTITY lol "lol">
  <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
  <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
  <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
  <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
  <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
  <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
  <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
  <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
  <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<robot name="&lol9;">""" + ROBOT + "</robot>"

# one 2 MB internal entity used 95 times: 190 MB of link name from a 2 MB file (accepted before defusedxml)
EXPANSION = ('<?xml version="1.0"?>\n<!DOCTYPE robot [<!ENTITY big "' + "x" * 2_000_000 + '">]>\n'
             '<robot name="r"><link name="' + "&big;" * 95 + '"/></robot>')

EXTERNAL_ENTITY = """<?xml version="1.0"?>
<!DOCTYPE robot [<!ENTITY secret SYSTEM "file:///etc/passwd">]>
<robot name="&secret;">""" + ROBOT + "</robot>"

EXTERNAL_DTD = '<?xml version="1.0"?>\n<!DOCTYPE robot SYSTEM "http://example.com/robot.dtd">\n<robot name="r">' + ROBOT + "</robot>"


def refused_quickly(urdf) -> InvalidModelError:
    t0 = time.perf_counter()
    with pytest.raises(InvalidModelError) as info:
        tree_from_urdf(urdf)
    assert time.perf_counter() - t0 < 1.0          # loose: expanding first would take seconds and gigabytes
    return info.value


@pytest.mark.parametrize("urdf", [BILLION_LAUGHS, EXPANSION], ids=["billion-laughs", "2MB-entity-x95"])
def test_entity_bombs_are_refused_before_expansion(urdf):
    assert len(urdf) < 2_100_000
    message = str(refused_quickly(urdf))
    assert "refused: it has a document type declaration <!DOCTYPE robot ...>" in message
    assert "without DTDs, entity declarations or external references" in message


@pytest.mark.parametrize("urdf", [EXTERNAL_ENTITY, EXTERNAL_DTD], ids=["external-entity", "external-dtd"])
def test_external_references_are_refused(urdf):
    message = str(refused_quickly(urdf))
    assert "URDF text refused" in message and "external references" in message
    assert "root:" not in message                  # nothing of /etc/passwd was read


@pytest.mark.parametrize("form", ["path", "bytes"])
def test_files_and_bytes_are_parsed_as_safely_as_text(tmp_path, form):
    path = tmp_path / "bomb.urdf"
    path.write_text(BILLION_LAUGHS)
    urdf = path if form == "path" else path.read_bytes()
    message = str(refused_quickly(urdf))
    assert message.startswith(f"URDF file {str(path)!r} refused" if form == "path" else "URDF bytes refused")


def test_ordinary_xml_is_still_read():
    """An XML declaration, comments and the predefined entities (&amp;) need no DTD and are accepted."""
    urdf = ('<?xml version="1.0" encoding="utf-8"?>\n<!-- a comment -->\n<robot name="a &amp; b">'
            + ROBOT.replace('name="arm"', 'name="arm&amp;hand"').replace('link="arm"', 'link="arm&amp;hand"') + "</robot>")
    tree = tree_from_urdf(urdf)
    assert [b.name for b in tree.bodies] == ["base", "j"] and tree.nv == 1
    np.testing.assert_array_equal(tree.damping, [0.0])
