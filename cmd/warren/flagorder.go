package main

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// flagsFirst moves a command's options in front of its positional
// arguments, so that `warren generate ./events --out gen` means the same
// as `warren generate --out gen ./events`. urfave/cli v2 stops reading
// options at the first positional argument and would otherwise take
// `--out` for a second schema directory. Everything after `--` stays as
// it is.
func flagsFirst(cmds []*cli.Command, args []string) []string {
	if len(args) < 3 {
		return args
	}
	cmd := findCommand(cmds, args[1])
	if cmd == nil {
		return args
	}
	if sub := findCommand(cmd.Subcommands, args[2]); sub != nil {
		// `warren outbox status ...`: the options are the subcommand's.
		return append([]string{args[0]}, flagsFirst(cmd.Subcommands, args[1:])...)
	}
	takesValue := map[string]bool{}
	for _, f := range cmd.Flags {
		_, isBool := f.(*cli.BoolFlag)
		for _, name := range f.Names() {
			takesValue[name] = !isBool
		}
	}
	var flags, positional []string
	rest := args[2:]
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a == "--" {
			positional = append(positional, rest[i:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			positional = append(positional, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			continue
		}
		if takesValue[name] && i+1 < len(rest) {
			i++
			flags = append(flags, rest[i])
		}
	}
	out := append([]string{args[0], args[1]}, flags...)
	return append(out, positional...)
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.Name == name {
			return c
		}
		for _, alias := range c.Aliases {
			if alias == name {
				return c
			}
		}
	}
	return nil
}
