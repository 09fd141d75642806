package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/warrenbus/warren/internal/suggest"
)

// Exit codes, the same for every command (docs/CLI.md has the table).
const (
	exitOK      = 0 // success; for check and generate --check: nothing to report
	exitFailure = 1 // findings, stale files, a failed operation
	exitUsage   = 2 // the command line itself is wrong
)

// usageError reports a wrong command line: what is wrong, then the
// command's usage line (not its whole help, which would bury the message),
// and where the help is. Exit status 2.
func usageError(c *cli.Context, format string, args ...any) error {
	return commandUsageError(c.Command, fmt.Sprintf(format, args...))
}

func commandUsageError(cmd *cli.Command, msg string) error {
	name := "warren"
	usage := "warren COMMAND [options] [arguments]"
	help := "warren help"
	if cmd != nil && cmd.Name != "" && cmd.Name != "warren" {
		name = "warren " + cmd.Name
		if strings.HasPrefix(cmd.HelpName, "warren ") {
			name = cmd.HelpName // a subcommand: "warren outbox status"
		}
		usage = cmd.UsageText
		help = name + " --help"
	}
	usage = strings.ReplaceAll(usage, "\n", "\n       ") // align further forms under the first
	return cli.Exit(fmt.Sprintf("%s: %s\nusage: %s\nrun '%s' for details", name, msg, usage, help), exitUsage)
}

// onUsageError replaces urfave/cli's reaction to an option it cannot
// parse (the message, then the whole help) with usageError's.
func onUsageError(c *cli.Context, err error, _ bool) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		name = strings.TrimLeft(name, "-")
		msg = "unknown option --" + name
		if s, ok := suggestOption(c.Command, name); ok {
			msg += "; did you mean " + s + "?"
		}
	}
	return commandUsageError(c.Command, msg)
}

func suggestOption(cmd *cli.Command, name string) (string, bool) {
	if cmd == nil {
		return "", false
	}
	var names []string
	for _, f := range cmd.Flags {
		names = append(names, f.Names()...)
	}
	s, ok := suggest.Closest(name, names)
	return "--" + s, ok
}

// unknownCommand reports, in one line, a first argument that names no
// command, with the closest command when one is close. It returns false
// when args hold no unknown command.
func unknownCommand(cmds []*cli.Command, args []string, stderr io.Writer) bool {
	if len(args) < 2 {
		return false
	}
	name := args[1]
	if (name == "help" || name == "h") && len(args) > 2 {
		name = args[2]
	}
	if strings.HasPrefix(name, "-") || name == "help" || name == "h" || findCommand(cmds, name) != nil {
		return false
	}
	var names []string
	for _, c := range cmds {
		names = append(names, c.Name)
	}
	line := fmt.Sprintf("warren: unknown command %q", name)
	if s, ok := suggest.Closest(name, names); ok {
		line += fmt.Sprintf("; did you mean %q?", s)
	} else {
		line += "; run 'warren help' for the commands"
	}
	fmt.Fprintln(stderr, line)
	return true
}
