package gomod_test

import (
	"path/filepath"
	"testing"

	"github.com/warrenbus/warren/cmd/warren/internal/gomod"
)

func TestPackagePath(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "svc", "go.mod"), "// the service\nmodule example.com/svc // its path\n\ngo 1.25\n")
	write(t, filepath.Join(root, "svc", "tools", "go.mod"), "module \"example.com/svc/tools\"\n")
	write(t, filepath.Join(root, "block", "go.mod"), "module (\n\texample.com/block\n)\n")
	for _, c := range []struct{ dir, want string }{
		{"svc", "example.com/svc"},
		{"svc/internal/catalogueevents", "example.com/svc/internal/catalogueevents"}, // need not exist
		{"svc/tools/gen", "example.com/svc/tools/gen"},                               // the nearest go.mod
		{"block/x", "example.com/block/x"},
	} {
		got, ok, err := gomod.PackagePath(filepath.Join(root, filepath.FromSlash(c.dir)))
		if err != nil || !ok || got != c.want {
			t.Errorf("PackagePath(%s) = %q, %v, %v; want %q", c.dir, got, ok, err, c.want)
		}
	}
}

func TestPackagePathOutsideAModule(t *testing.T) {
	dir := t.TempDir()
	if _, ok, _ := gomod.PackagePath(dir); ok {
		t.Skip("a go.mod encloses the temporary directory")
	}
	got, ok, err := gomod.PackagePath(filepath.Join(dir, "out"))
	if err != nil || ok || got != "" {
		t.Errorf("PackagePath outside a module = %q, %v, %v; want nothing", got, ok, err)
	}
}

func TestPackagePathWithoutModuleDirective(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "go.mod"), "go 1.25\n")
	if _, _, err := gomod.PackagePath(filepath.Join(root, "x")); err == nil {
		t.Error("a go.mod without a module directive gave an import path")
	}
}
