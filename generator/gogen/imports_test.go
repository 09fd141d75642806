package gogen

import (
	"go/format"
	"testing"
)

func TestGroupImportsStandardLibraryFirst(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{
			name: "mixed",
			in:   "package p\n\nimport (\n\t\"github.com/warrenbus/warren/runtime\"\n\t\"time\"\n\t\"encoding/json\"\n)\n",
			want: "package p\n\nimport (\n\t\"encoding/json\"\n\t\"time\"\n\n\t\"github.com/warrenbus/warren/runtime\"\n)\n",
		},
		{
			name: "named import kept",
			in:   "package p\n\nimport (\n\tjen \"github.com/dave/jennifer/jen\"\n\t\"errors\"\n)\n",
			want: "package p\n\nimport (\n\t\"errors\"\n\n\tjen \"github.com/dave/jennifer/jen\"\n)\n",
		},
		{
			name: "standard library only",
			in:   "package p\n\nimport (\n\t\"time\"\n\t\"context\"\n)\n",
			want: "package p\n\nimport (\n\t\"context\"\n\t\"time\"\n)\n",
		},
		{
			name: "one import",
			in:   "package p\n\nimport \"github.com/warrenbus/warren/runtime\"\n",
			want: "package p\n\nimport \"github.com/warrenbus/warren/runtime\"\n",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := format.Source(groupImports([]byte(c.in)))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Errorf("got\n%s\nwant\n%s", got, c.want)
			}
		})
	}
}
