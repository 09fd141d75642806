package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// No command that reads a schema directory follows a symbolic link out of
// it: a pull request could otherwise make warren read, embed or print any
// file of the machine that runs it.
func TestEveryCommandRefusesSymlinkOutOfSchemaDir(t *testing.T) {
	root := t.TempDir()
	secret := `{"x-routing-key": "secret.read", "type": "object", "description": "TOP-SECRET-CONTENT"}`
	if err := os.WriteFile(filepath.Join(root, "outside.json"), []byte(secret), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := schemaDir(t, validSchemas)
	if err := os.Mkdir(filepath.Join(dir, "c"), 0o755); err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(filepath.Join(dir, "c"), filepath.Join(root, "outside.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(rel, filepath.Join(dir, "c", "link.json")); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "gen")
	clean := schemaDir(t, validSchemas)
	commands := [][]string{
		{"generate", "--out", out, dir},
		{"check", dir},
		{"docs", dir},
		{"topology", dir},
		{"diff", clean, dir},
		{"diff", dir, clean},
		{"declare", dir},
		{"status", dir},
		{"replay", "--consumer", "mailer", "--list", dir},
	}
	for _, args := range commands {
		t.Run(strings.Join(args[:1], " "), func(t *testing.T) {
			code, stdout, stderr := run(t, args...)
			if code == 0 {
				t.Fatalf("warren %v: exit 0, stdout %q", args, stdout)
			}
			if !strings.Contains(stdout+stderr, "c/link.json: symbolic link to ") || !strings.Contains(stdout+stderr, "leads outside the schema directory") {
				t.Errorf("warren %v: exit %d, stdout %q, stderr %q; want the link named as leading outside", args, code, stdout, stderr)
			}
			if strings.Contains(stdout+stderr, "TOP-SECRET-CONTENT") {
				t.Errorf("warren %v printed the outside file's content", args)
			}
		})
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("generate wrote %s: %v", out, err)
	}
}
