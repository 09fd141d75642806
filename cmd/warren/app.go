package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/warrenbus/warren/generator/load"
	"github.com/warrenbus/warren/internal/secret"
)

// commands holds a constructor per subcommand. Each command lives in its
// own file and adds itself with register from an init function, so adding
// a command touches no other file.
var commands []func() *cli.Command

func register(c func() *cli.Command) { commands = append(commands, c) }

// Run runs the CLI with args (args[0] is the program name), writing to
// stdout and stderr, and returns the process exit code: 0 on success, 1 on
// findings or failure, 2 on a wrong command line (see usage.go). Errors go
// to stderr, one per line. Tests call Run in-process.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var cmds []*cli.Command
	for _, c := range commands {
		cmd := c()
		cmd.OnUsageError = onUsageError
		cmds = append(cmds, cmd)
	}
	slices.SortFunc(cmds, func(a, b *cli.Command) int { return strings.Compare(a.Name, b.Name) })
	if unknownCommand(cmds, args, stderr) {
		return exitUsage
	}
	cli.VersionPrinter = func(c *cli.Context) { fmt.Fprintf(c.App.Writer, "warren %s\n", c.App.Version) }
	app := &cli.App{
		Name:         "warren",
		Usage:        "typed event messaging on RabbitMQ, generated from JSON Schemas",
		UsageText:    "warren COMMAND [options] [arguments]",
		Description:  "Example:\n   warren generate --out internal/events ./events",
		Writer:       stdout,
		ErrWriter:    stderr,
		Version:      version(),
		Commands:     cmds,
		OnUsageError: onUsageError,
		// The default handler calls os.Exit; Run returns the code instead.
		ExitErrHandler: func(*cli.Context, error) {},
	}
	err := app.RunContext(ctx, flagsFirst(cmds, args))
	if err == nil {
		return 0
	}
	var exit cli.ExitCoder
	if errors.As(err, &exit) {
		// Commands redact what they print; this is the last stop before
		// the terminal should one of them not.
		if msg := exit.Error(); msg != "" {
			fmt.Fprintln(stderr, secret.Text(msg))
		}
		return exit.ExitCode()
	}
	fmt.Fprintf(stderr, "warren: %v\n", secret.Error(err))
	return 1
}

// errReported ends a command whose errors are already on stderr.
var errReported = cli.Exit("", 1)

// reportError prints err to w, one problem per line. Positions in the
// schema directory are printed with the directory as the user gave it, so
// that editors and terminals can open them. It returns errReported.
func reportError(w io.Writer, command, schemaDir string, err error) error {
	if ec := cli.ExitCoder(nil); errors.As(err, &ec) {
		return err // a usage error, worded with its usage line and exit status
	}
	var list load.ErrorList
	if !errors.As(err, &list) {
		fmt.Fprintf(w, "warren %s: %v\n", command, err)
		return errReported
	}
	for _, e := range list {
		shown := *e
		shown.File = shownFile(schemaDir, e.File)
		fmt.Fprintln(w, shown.Error())
	}
	return errReported
}

// oneArg returns the single positional argument of a command.
func oneArg(c *cli.Context, name string) (string, error) {
	switch c.NArg() {
	case 1:
		return c.Args().First(), nil
	case 0:
		return "", usageError(c, "expected %s", name)
	}
	return "", usageError(c, "expected one %s, got %q", name, c.Args().Slice())
}

// shownFile is how every command names file (slash-separated, relative to
// the schema directory) to the user: joined with the directory as given on
// the command line, so that editors and terminals can open it. A problem
// with no file, or outside the schema directory, stays as it is.
func shownFile(schemaDir, file string) string {
	if file == "" || schemaDir == "" || filepath.IsAbs(filepath.FromSlash(file)) {
		return file // absolute: a file of an imported module
	}
	return filepath.Join(schemaDir, filepath.FromSlash(file))
}
