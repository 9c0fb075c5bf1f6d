"""docs/PERFORMANCE.md stays a report a user reads: at most 600 lines, opening with a summary of
at most 10 lines (the text between the title and the first section), and every link in it leads
somewhere (a file under docs/, or a heading of the report itself), so that detail moved to
docs/investigations/ stays reachable."""
import os
import re
import unittest

DOCS = os.path.join(os.environ.get("TEST_SRCDIR", ""), os.environ.get("TEST_WORKSPACE", ""), "docs")
REPORT = os.path.join(DOCS, "PERFORMANCE.md")
MAX_LINES = 600
MAX_SUMMARY_LINES = 10


def report_lines():
    with open(REPORT, encoding="utf-8") as f:
        return f.read().splitlines()


def anchor(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def outside_code(lines):
    """The lines that are not inside a fenced code block."""
    fenced = False
    for line in lines:
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced:
            yield line


class PerformanceReport(unittest.TestCase):
    def test_at_most_600_lines(self):
        self.assertLessEqual(len(report_lines()), MAX_LINES,
                             "docs/PERFORMANCE.md grew past %d lines: move history and step-by-step "
                             "detail to docs/investigations/" % MAX_LINES)

    def test_opens_with_a_summary_of_at_most_10_lines(self):
        lines = report_lines()
        self.assertEqual(lines[0], "# Performance")
        first_section = next(i for i, line in enumerate(lines) if line.startswith("## "))
        summary = [line for line in lines[1:first_section] if line.strip()]
        self.assertTrue(summary, "no summary before the first section")
        self.assertLessEqual(len(summary), MAX_SUMMARY_LINES,
                             "the summary is %d lines:\n%s" % (len(summary), "\n".join(summary)))

    def test_every_link_leads_somewhere(self):
        lines = list(outside_code(report_lines()))
        anchors = {anchor(line.lstrip("#")) for line in lines if line.startswith("#")}
        text = "\n".join(lines)
        links = re.findall(r"\]\(([^)\s]+)\)", text)
        self.assertTrue(any(link.startswith("investigations/") for link in links))
        for link in links:
            path, _, fragment = link.partition("#")
            if re.match(r"[a-z]+:", path):
                continue
            if path:
                self.assertTrue(os.path.exists(os.path.join(DOCS, path)), "%s leads nowhere" % link)
            else:
                self.assertIn(fragment, anchors, "#%s is no heading of the report" % fragment)


if __name__ == "__main__":
    unittest.main()
