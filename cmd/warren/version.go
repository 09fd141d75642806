package main

import (
	"fmt"
	"runtime/debug"

	"github.com/urfave/cli/v2"
)

func init() { register(versionCommand) }

// versionCommand is warren --version as a command, the spelling of go,
// kubectl and docker, which scripts and people type as often.
func versionCommand() *cli.Command {
	return &cli.Command{
		Name:      "version",
		Usage:     "print the version of warren, as warren --version",
		UsageText: "warren version",
		Description: `Prints "warren" and the version this binary was built from: the module
version (go install ...@v1.2.3, or the one a service's go.mod requires for
go tool warren), or "(devel)" with the commit for a build in a checkout.

Examples:
   warren version
   go tool warren version   # the version the service's go.mod requires`,
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usageError(c, "expected no arguments, got %q", c.Args().Slice())
			}
			_, err := fmt.Fprintf(c.App.Writer, "warren %s\n", c.App.Version)
			return err
		},
	}
}

// version reports the version of warren this binary was built from.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
	return versionOf(info)
}

// versionOf reads the version of warren from build information, whose
// Main is the module holding the main package: warren itself, whether the
// binary came from `go install github.com/warrenbus/warren/cmd/warren@v1.2.3`
// or from `go tool warren` in a service (then it is the version the
// service's go.mod requires). A replace directive to a directory has no
// version of its own, so the replaced version is shown with the directory.
// A build inside a checkout has no module version; the VCS revision, when
// Go recorded one, says what it is.
func versionOf(info *debug.BuildInfo) string {
	m := info.Main
	if r := m.Replace; r != nil {
		if r.Version != "" && r.Version != "(devel)" {
			return r.Version // replaced by another module version
		}
		return m.Version + " (replaced by " + r.Path + ")"
	}
	if m.Version == "" || m.Version == "(devel)" {
		return develVersion(info.Settings)
	}
	return m.Version
}

// develVersion describes a build from a working tree: "(devel)", with the
// commit and whether the tree had uncommitted changes when Go recorded them.
func develVersion(settings []debug.BuildSetting) string {
	var rev, modified string
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	v := "(devel)"
	if rev != "" {
		v += " " + rev[:min(12, len(rev))]
		if modified == "true" {
			v += "+dirty"
		}
	}
	return v
}
