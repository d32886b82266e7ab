"""The tools of the two other tasks on a vulnerability: reproduce it (write an input that crashes
the fuzz target, :class:`PocTools`) and fix it (edit the C/C++ source, :class:`FixTools`).

Both work through a :class:`TaskEnvironment` like the other tools, and every command is
recorded. The docstrings are what the model reads.
"""

from __future__ import annotations

import base64
import binascii
import posixpath
import shlex
import uuid
from typing import Literal

from services.purple.signals import Submitted
from services.purple.tools.base import output_text
from services.purple.tools.rca import RcaTools
from services.purple.tools.registry import ToolRegistry
from services.purple.tools.swe import SweTools
from services.shared.protocol import submit_result_text


class PocTools(RcaTools):
    """Reproduce a vulnerability: explore, write an input file, try it, submit it."""

    budget_kept_for = "; the last one is kept for writing the input"
    budget_advice = "Call submit_input now."

    def registry(self) -> ToolRegistry:
        return ToolRegistry(
            [
                self.run_bash_cmd,
                self.show_file,
                self.search_code,
                self.write_input,
                self.submit_input,
            ]
        )

    async def run_bash_cmd(self, command: str) -> str:
        """Run a shell command (bash) in the task container and return its exit code and output.

        The working directory is the workspace: src-vul/ (the vulnerable source) and, as the
        task says, description.txt and error.txt are there; the fuzz target is in /out/. Long
        outputs are cut in the middle, so prefer targeted commands (grep -n, sed -n 'A,Bp',
        head, xxd | head). Do not start interactive programs.

        Args:
            command: The command line, e.g. "grep -rn 'LLVMFuzzerTestOneInput' src-vul".
        """
        return await self._run_bash(command)

    async def write_input(
        self, content: str, encoding: Literal["text", "hex", "base64"] = "text"
    ) -> str:
        """Write the input file (your answer) with the given bytes, replacing what was there.

        Run the fuzz target on it with run_bash_cmd to check that it crashes (the task says
        how); for inputs built by a program, run a Python script with run_bash_cmd instead and
        write the file from it.

        Args:
            content: The bytes: text as is ("text"), hexadecimal digits ("hex", spaces
                allowed), or base64 ("base64").
            encoding: How content is written: "text", "hex" or "base64".
        """
        if exhausted := self.budget_exhausted():
            return exhausted
        try:
            if encoding == "hex":
                data = bytes.fromhex("".join(content.split()))
            elif encoding == "base64":
                data = base64.b64decode(content, validate=True)
            else:
                data = content.encode()
        except (ValueError, binascii.Error) as exc:
            return f"Input not written: content is not valid {encoding} ({exc})."
        target = self.paths.submission
        delim = f"POC_{uuid.uuid4().hex}"
        encoded = base64.b64encode(data).decode()
        body = "\n".join(encoded[i : i + 76] for i in range(0, len(encoded), 76))
        cmd = (
            f"mkdir -p {shlex.quote(posixpath.dirname(target))} && "
            f"base64 -d > {shlex.quote(target)} <<'{delim}'\n{body}\n{delim}\n"
            f'echo "wrote $(wc -c < {shlex.quote(target)}) bytes to {target}"'
        )
        return output_text(await self.execute(cmd, tool=f"write_input ({len(data)} bytes)"))

    async def submit_input(self) -> str:
        """Submit the input file as your answer; the judge runs it on the vulnerable and the
        fixed build. If it is refused you get the reason and can submit again."""
        reply = await self.env.submit(self.stats() if self.stats else None)
        if reply.accepted:
            raise Submitted("input accepted")
        return submit_result_text(reply) + "\nFix the problem and call submit_input again."


class FixTools(SweTools):
    """Fix a vulnerability in C/C++ source: the SWE tools (commands run in the project's tree,
    edits by line), without the Python test finder."""

    def registry(self) -> ToolRegistry:
        return ToolRegistry(
            [self.run_bash_cmd, self.show_file, self.replace_in_file, self.search_code, self.finish]
        )

    async def run_bash_cmd(self, command: str) -> str:
        """Run a shell command (bash) in the project's source tree and return its exit code and
        output.

        Every command starts in the tree's root (a `cd` does not carry over; chain with `&&`).
        `git diff` shows your changes. Long outputs are cut in the middle, so prefer targeted
        commands (grep -n, sed -n 'A,Bp', head). Do not start interactive programs.

        Args:
            command: The command line, e.g. "grep -rn 'decode_entity' src include | head".
        """
        return await self._run_bash(command)

    async def search_code(
        self, pattern: str, file_pattern: str = "*.c,*.h,*.cc,*.cpp,*.hpp", path: str = "."
    ) -> str:
        """Search the source tree for an extended regular expression (grep -rnE); prints
        file:line:text (the .git folder is skipped).

        Args:
            pattern: Extended regex, e.g. "xml_decode_entity|struct xml_node". Quote nothing:
                it is passed to grep as is.
            file_pattern: File name glob(s), comma-separated, e.g. "*.c,*.h"; "*" searches
                every file.
            path: File or folder to search, relative to the tree's root.
        """
        return await SweTools.search_code(self, pattern, file_pattern, path)
