package sqltable

import (
	"strings"
	"testing"
	"testing/fstest"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name      string
		qualified bool
		want      string // Quoted(), or the error's substring when wantErr
		wantErr   bool
	}{
		{"claims", false, `"claims"`, false},
		{"_c1", false, `"_c1"`, false},
		{"app.claims", true, `"app"."claims"`, false},
		{"app.claims", false, "sqlite does not take a schema-qualified name", true},
		{"Claims", true, "expected lower-case letters", true},
		{`claims"; DROP TABLE users; --`, true, "expected lower-case letters", true},
		{"claims-1", true, "expected lower-case letters", true},
		{"1claims", true, "expected lower-case letters", true},
		{"a.b.c", true, "expected lower-case letters", true},
		{".claims", true, "expected lower-case letters", true},
		{strings.Repeat("x", 11), true, "longer than 10", true},
		{strings.Repeat("x", 11) + ".t", true, "longer than 10", true},
	}
	for _, tt := range tests {
		n, err := Parse(tt.name, "sqlite", tt.qualified, 10)
		switch {
		case tt.wantErr && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("Parse(%q) error = %v, want one containing %q", tt.name, err, tt.want)
		case !tt.wantErr && err != nil:
			t.Errorf("Parse(%q): %v", tt.name, err)
		case !tt.wantErr && n.Quoted() != tt.want:
			t.Errorf("Parse(%q).Quoted() = %s, want %s", tt.name, n.Quoted(), tt.want)
		}
	}
}

func TestScripts(t *testing.T) {
	fsys := fstest.MapFS{
		"m/002_index.sql": {Data: []byte("CREATE INDEX {{index}} ON {{table}} (at);")},
		"m/001_table.sql": {Data: []byte("CREATE TABLE {{table}} (at int);")},
		"m/README":        {Data: []byte("not a script")},
	}
	got, err := Scripts(fsys, "m", map[string]string{"table": `"t"`, "index": `"t_at"`})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`CREATE TABLE "t" (at int);`, `CREATE INDEX "t_at" ON "t" (at);`}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("Scripts = %q, want %q", got, want)
	}
	if _, err := Scripts(fsys, "missing", nil); err == nil {
		t.Error("Scripts of a missing directory: no error")
	}
}
