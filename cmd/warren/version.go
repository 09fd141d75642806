package main

import (
	"runtime/debug"
	"strings"
)

// commandPath is the import path of this program, to find its module in
// the build information.
const commandPath = "github.com/warrenbus/warren/cmd/warren"

// version reports the version of warren this binary was built from.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
	return versionOf(info)
}

// versionOf reads the version of the module that holds this command from
// build information. `go install github.com/warrenbus/warren/cmd/warren@v1.2.3`
// makes warren the main module, with Main.Version v1.2.3. `go tool warren`
// in a service builds the command as a dependency: the main module is the
// service, and warren's version is the one in the service's go.mod, found
// among Deps (a replace directive to a directory has no version; the
// replaced version is shown with the directory). A build inside a
// checkout has no module version; the VCS revision says what it is.
func versionOf(info *debug.BuildInfo) string {
	if info.Main.Path != "" && within(commandPath, info.Main.Path) {
		v := info.Main.Version
		if v == "" || v == "(devel)" {
			return develVersion(info.Settings)
		}
		return v
	}
	for _, dep := range info.Deps {
		if !within(commandPath, dep.Path) {
			continue
		}
		if dep.Replace != nil {
			if dep.Replace.Version != "" {
				return dep.Replace.Version
			}
			return dep.Version + " (replaced by " + dep.Replace.Path + ")"
		}
		return dep.Version
	}
	return develVersion(info.Settings)
}

// within reports whether package path pkg belongs to module mod.
func within(pkg, mod string) bool {
	return pkg == mod || strings.HasPrefix(pkg, mod+"/")
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
