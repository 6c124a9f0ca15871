#!/usr/bin/env bash
# Checks that the repository stands alone (run by `make vet`): a reader has
# only the repository, so no tracked file cites a file outside it (the
# project's design notes, design[.]md) or this project's own issue numbers.
# Caught, case as shown, also across a line break inside a comment:
#   design[.]md (any case);
#   "issue" or "issues" (not inside a word: "tissue" is fine) or "Issue",
#   "Issues" (also inside a name), then any of space, tab, "-", "_", "#",
#   then a digit: "issue N", "Issue N's", "issues N and M", "issue #N",
#   "issue-N" (an anchor), "TestIssueN" (a test name).
# Other projects' issues stay welcome, written as their project and "#N"
# (kafka-go #1378, golang/go#12345), as a JIRA key (KAFKA-19444), as a URL
# (.../issues/1378), or as "owner/repo issue N": none of these is caught.
# Binary files are skipped. The exact rule is documented in docs/testing.md.
# Run with CHECK_ROOT=DIR to check another tree (the planted-violation test
# in deploy/checks does); outside a git work tree every file under DIR is
# checked.
set -euo pipefail
cd "${CHECK_ROOT:-$(dirname "${BASH_SOURCE[0]}")/..}"
if [ "$(git rev-parse --show-toplevel 2>/dev/null)" = "$(pwd -P)" ]; then
  list() { git ls-files -z; }
else
  list() { find . -path ./.git -prune -o -type f -printf '%P\0'; }
fi
list | perl -0 -ne '
  chomp(my $f = $_);
  next unless -f $f;
  open(my $h, "<", $f) or do { print STDERR "check-standalone: cannot read $f: $!\n"; $bad = 1; next };
  local $/; my $s = <$h>; close $h;
  next if index(substr($s, 0, 8000), "\0") >= 0; # binary
  my $sep = qr{[ \t_#-]*(?:\n[ \t]*(?://+|--|\#|\*|;)?[ \t#]*)?};
  while ($s =~ m{((?i)design\.md)|(?:(?<![A-Za-z])issues?|Issues?)$sep\d+}g) {
    my ($at, $what, $design) = ($-[0], $&, defined $1);
    # another project: "owner/repo issue N"
    next if !$design && substr($s, 0, $at) =~ m{[\w.-]+/[\w.-]+[ \t]+\z};
    my $line = 1 + (substr($s, 0, $at) =~ tr/\n//);
    (my $shown = $what) =~ s/\s+/ /g;
    if ($design) {
      print "check-standalone: $f:$line: cites \"$shown\", a file outside the repository: say the rule itself or point at docs/ (docs/diagnosis.md, docs/event-format.md, docs/remediation.md, docs/architecture.md, docs/testing.md)\n";
    } else {
      print "check-standalone: $f:$line: cites \"$shown\", this project\x27s own issue: say the thing itself (a target with docs/performance.md, a rule with its doc); another project\x27s issue is written project #N, owner/repo#N or a URL\n";
    }
    $bad = 1;
  }
  END { exit($bad ? 1 : 0) }
'
