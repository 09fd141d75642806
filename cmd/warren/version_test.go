package main

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersionOf(t *testing.T) {
	warren := "github.com/warrenbus/warren"
	cmd := warren + "/cmd/warren"
	cases := []struct {
		name string
		info debug.BuildInfo
		want string
	}{
		{
			name: "go install @v1.2.3",
			info: debug.BuildInfo{Path: cmd, Main: debug.Module{Path: warren, Version: "v1.2.3"}},
			want: "v1.2.3",
		},
		{
			// go tool builds the tool with the tool's own module as Main.
			name: "go tool in a service requiring v1.4.0",
			info: debug.BuildInfo{Path: cmd, Main: debug.Module{Path: warren, Version: "v1.4.0"},
				Deps: []*debug.Module{{Path: "github.com/google/uuid", Version: "v1.6.0"}}},
			want: "v1.4.0",
		},
		{
			name: "go tool with a replace to a checkout",
			info: debug.BuildInfo{Path: cmd, Main: debug.Module{Path: warren, Version: "v0.0.0", Replace: &debug.Module{Path: "../warren", Version: "(devel)"}}},
			want: "v0.0.0 (replaced by ../warren)",
		},
		{
			name: "a replace by another version",
			info: debug.BuildInfo{Path: cmd, Main: debug.Module{Path: warren, Version: "v1.0.0", Replace: &debug.Module{Path: "example.com/fork/warren", Version: "v1.0.1"}}},
			want: "v1.0.1",
		},
		{
			name: "built in a checkout",
			info: debug.BuildInfo{Path: cmd, Main: debug.Module{Path: warren, Version: "(devel)"},
				Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}}},
			want: "(devel) 0123456789ab+dirty",
		},
		{
			name: "built in a checkout without VCS stamping",
			info: debug.BuildInfo{Path: cmd, Main: debug.Module{Path: warren, Version: "(devel)"}},
			want: "(devel)",
		},
	}
	for _, c := range cases {
		if got := versionOf(&c.info); got != c.want {
			t.Errorf("%s: version %q, want %q", c.name, got, c.want)
		}
	}
}

func TestVersionFlag(t *testing.T) {
	for _, arg := range []string{"--version", "-v", "version"} {
		code, stdout, stderr := run(t, arg)
		if code != 0 || stderr != "" || stdout != "warren "+version()+"\n" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", arg, code, stdout, stderr)
		}
	}
	if !strings.HasPrefix(version(), "(devel)") && !strings.HasPrefix(version(), "v") {
		t.Errorf("version %q is neither a module version nor a development build", version())
	}
}

func TestVersionCommandTakesNoArguments(t *testing.T) {
	code, stdout, stderr := run(t, "version", "extra")
	if code != 2 || stdout != "" || !strings.HasPrefix(stderr, "warren version: expected no arguments, got [\"extra\"]\nusage: warren version\n") {
		t.Errorf("version extra: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}
