"""FastMCP's skills client (PyPI, pinned by run.sh) against the `site` example over HTTP:
list the skills, get each, read each with every file's size and digest verified, and be told
-32602 for a skill that is not served."""

import asyncio
import sys

from fastmcp import Client
from fastmcp.skills import SkillsClientExtension

EXPECTED = {
    "skill://posts/SKILL.md": 1,
    "skill://publishing/SKILL.md": 3,
    "skill://site/SKILL.md": 1,
    "skill://users/SKILL.md": 1,
}


async def main(url: str) -> None:
    async with Client(url, extensions=[SkillsClientExtension()]) as client:
        skills = await client.list_skills()
        listed = {s.uri: len(s.resources) for s in skills}
        assert listed == EXPECTED, listed
        for uri in sorted(listed):
            entry = await client.get_skill(uri)
            assert entry.uri == uri, entry
            # Every file read, its size and SHA-256 checked against the manifest, and the
            # frontmatter against the entry: a mismatch raises.
            skill = await client.read_skill(uri)
            assert len(skill.files) == EXPECTED[uri], sorted(skill.files)
            assert skill.name == uri.split("/")[2], skill.name
        publishing = await client.read_skill("skill://publishing/SKILL.md")
        assert sorted(publishing.files) == [
            "SKILL.md",
            "reference/checklist.md",
            "reference/style.md",
        ], sorted(publishing.files)
        try:
            await client.get_skill("skill://nowhere/SKILL.md")
        except Exception as error:  # the SDK's MCPError
            code = getattr(getattr(error, "error", None), "code", None)
            assert code == -32602, (type(error), error)
        else:
            raise AssertionError("an unknown skill was answered")
    print(f"fastmcp skills client: {len(listed)} skills read, every digest verified")


asyncio.run(main(sys.argv[1]))
