package main

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersionOf(t *testing.T) {
	warren := "github.com/warrenbus/warren"
	cases := []struct {
		name string
		info debug.BuildInfo
		want string
	}{
		{
			name: "go install @v1.2.3",
			info: debug.BuildInfo{Path: commandPath, Main: debug.Module{Path: warren, Version: "v1.2.3"}},
			want: "v1.2.3",
		},
		{
			name: "go tool in a service",
			info: debug.BuildInfo{Path: commandPath, Main: debug.Module{Path: "example.com/shop", Version: "(devel)"},
				Deps: []*debug.Module{{Path: "github.com/google/uuid", Version: "v1.6.0"}, {Path: warren, Version: "v1.4.0"}}},
			want: "v1.4.0",
		},
		{
			name: "go tool with a replace to a checkout",
			info: debug.BuildInfo{Path: commandPath, Main: debug.Module{Path: "example.com/shop"},
				Deps: []*debug.Module{{Path: warren, Version: "v0.0.0", Replace: &debug.Module{Path: "../warren"}}}},
			want: "v0.0.0 (replaced by ../warren)",
		},
		{
			name: "built in a checkout",
			info: debug.BuildInfo{Path: commandPath, Main: debug.Module{Path: warren, Version: "(devel)"},
				Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}}},
			want: "(devel) 0123456789ab+dirty",
		},
		{
			name: "a module whose name only starts like warren's",
			info: debug.BuildInfo{Path: commandPath, Main: debug.Module{Path: "github.com/warrenbus/warren-tools", Version: "v9.9.9"},
				Deps: []*debug.Module{{Path: warren, Version: "v1.0.0"}}},
			want: "v1.0.0",
		},
	}
	for _, c := range cases {
		if got := versionOf(&c.info); got != c.want {
			t.Errorf("%s: version %q, want %q", c.name, got, c.want)
		}
	}
}

func TestVersionFlag(t *testing.T) {
	for _, arg := range []string{"--version", "-v"} {
		code, stdout, stderr := run(t, arg)
		if code != 0 || stderr != "" || stdout != "warren "+version()+"\n" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", arg, code, stdout, stderr)
		}
	}
	if !strings.HasPrefix(version(), "(devel)") && !strings.HasPrefix(version(), "v") {
		t.Errorf("version %q is neither a module version nor a development build", version())
	}
}
