package main

import (
	"strings"
	"testing"
)

func TestUnknownCommandSuggestsTheClosest(t *testing.T) {
	cases := []struct{ args, want string }{
		{"genrate ./events", "warren: unknown command \"genrate\"; did you mean \"generate\"?\n"},
		{"stauts", "warren: unknown command \"stauts\"; did you mean \"status\"?\n"},
		{"help chek", "warren: unknown command \"chek\"; did you mean \"check\"?\n"},
		{"frobnicate", "warren: unknown command \"frobnicate\"; run 'warren help' for the commands\n"},
	}
	for _, c := range cases {
		code, stdout, stderr := run(t, strings.Fields(c.args)...)
		if code != 2 || stdout != "" || stderr != c.want {
			t.Errorf("warren %s: exit %d, stdout %q, stderr %q; want exit 2 and %q", c.args, code, stdout, stderr, c.want)
		}
	}
}

func TestUsageErrorPrintsTheUsageLineOnly(t *testing.T) {
	code, stdout, stderr := run(t, "generate", "--chek", "./events")
	want := "warren generate: unknown option --chek; did you mean --check?\n" +
		"usage: warren generate [--out DIR] [--package NAME] [--check] SCHEMA_DIR\n" +
		"run 'warren generate --help' for details\n"
	if code != 2 || stdout != "" || stderr != want {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 and\n%s", code, stdout, stderr, want)
	}
	// A command with two forms shows both, aligned.
	code, _, stderr = run(t, "diff", "only-one")
	if code != 2 || !strings.Contains(stderr, "usage: warren diff [--format text|markdown|json|github|sarif] OLD_DIR NEW_DIR\n       warren diff [--format text|markdown|json|github|sarif] --base REV NEW_DIR\n") {
		t.Errorf("diff with one directory: exit %d, stderr %q", code, stderr)
	}
	code, _, stderr = run(t, "--bogus")
	if code != 2 || !strings.HasPrefix(stderr, "warren: unknown option --bogus\nusage: warren COMMAND") {
		t.Errorf("unknown global option: exit %d, stderr %q", code, stderr)
	}
}

func TestNoArgumentsPrintsHelp(t *testing.T) {
	code, stdout, _ := run(t)
	for _, want := range []string{"USAGE:", "generate", "asyncapi", "status", "--version"} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("warren alone: exit %d, %q missing from:\n%s", code, want, stdout)
		}
	}
}
