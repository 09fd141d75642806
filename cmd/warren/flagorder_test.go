package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/urfave/cli/v2"
)

func TestFlagsFirst(t *testing.T) {
	cmds := []*cli.Command{{
		Name:    "generate",
		Aliases: []string{"gen"},
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "out", Aliases: []string{"o"}},
			&cli.BoolFlag{Name: "check"},
		},
	}}
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"already in order", []string{"warren", "generate", "--out", "gen", "./events"}, []string{"warren", "generate", "--out", "gen", "./events"}},
		{"value flag after the argument", []string{"warren", "generate", "./events", "--out", "gen"}, []string{"warren", "generate", "--out", "gen", "./events"}},
		{"alias and bool flag", []string{"warren", "gen", "./events", "-o", "gen", "--check"}, []string{"warren", "gen", "-o", "gen", "--check", "./events"}},
		{"flag=value keeps its value", []string{"warren", "generate", "./events", "--out=gen"}, []string{"warren", "generate", "--out=gen", "./events"}},
		{"a bool flag does not swallow the argument", []string{"warren", "generate", "--check", "./events"}, []string{"warren", "generate", "--check", "./events"}},
		{"after -- nothing moves", []string{"warren", "generate", "--", "--out", "x"}, []string{"warren", "generate", "--", "--out", "x"}},
		{"unknown command untouched", []string{"warren", "nope", "a", "--out", "b"}, []string{"warren", "nope", "a", "--out", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, flagsFirst(cmds, tt.args)); diff != "" {
				t.Errorf("flagsFirst(%q) (-want +got):\n%s", tt.args, diff)
			}
		})
	}
}

func TestOptionsAfterSchemaDir(t *testing.T) {
	code, _, stderr := run(t, "generate", "../../examples/catalogue/events", "--check", "--out", "../../examples/catalogue/catalogueevents")
	if code != 0 {
		t.Fatalf("generate DIR --check --out OUT: exit %d, stderr:\n%s", code, stderr)
	}
}
