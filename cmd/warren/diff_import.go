package main

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/warrenbus/warren/cmd/warren/internal/gomod"
	"github.com/warrenbus/warren/generator"
	"github.com/warrenbus/warren/generator/load"
	"github.com/warrenbus/warren/generator/schemadiff"
)

// runDiffImport is warren diff --base-module MODULE@VERSION SCHEMA_DIR, in a
// consumer's repository: the imported module at VERSION (the version the
// service is leaving) against the version its go.mod pins now, judged for
// the facts SCHEMA_DIR's consumers bind.
func runDiffImport(c *cli.Context, dir, base, format string) error {
	mod, version, ok := strings.Cut(base, "@")
	if !ok || mod == "" || version == "" {
		return usageError(c, "--base-module %q: expected MODULE@VERSION, such as github.com/acme/catalogue-events@v1.3.0", base)
	}
	stderr := c.App.ErrWriter
	// Only the files must load, as for each side compared (see openSide).
	p, err := generator.Open(c.Context, dir, genOptions(dir))
	if p == nil {
		reportError(stderr, "diff", dir, err)
		return errDiffFailed(fmt.Sprintf("warren diff: %s is not valid", dir))
	}
	s := p.Schemas
	var imp *load.Imported
	var modules []string
	for _, i := range s.Imports {
		if i.Import.Module == mod {
			imp = i
		}
		if i.Import.Module != "" {
			modules = append(modules, i.Import.Module)
		}
	}
	if imp == nil {
		return errDiffFailed(fmt.Sprintf("warren diff: %s imports no module %s (it imports %s)", filepath.Join(dir, load.ManifestFile), mod, orNone(modules)))
	}
	var bindings []string
	for _, mc := range s.Manifest.Consumers {
		bindings = append(bindings, mc.Bindings...)
	}
	cur, err := openSide(c.Context, imp.Dir, genOptions(imp.Dir))
	if err != nil {
		reportError(stderr, "diff", imp.Dir, err)
		return errDiffFailed(fmt.Sprintf("warren diff: %s is not valid", imp.Label()))
	}
	old, oldLabel, err := loadModuleVersion(c, dir, imp, version)
	if err != nil {
		return err
	}
	r := schemadiff.CompareImport(old, cur, bindings)
	return writeDiff(c, r, format, schemadiff.Labels{Old: oldLabel, New: imp.Label()})
}

// loadModuleVersion reads the imported schema directory of imp's module at
// version, from the module cache (downloading it through GOPROXY if
// needed).
func loadModuleVersion(c *cli.Context, dir string, imp *load.Imported, version string) (*schemadiff.Dir, string, error) {
	r := &gomod.Resolver{ModuleDir: dir}
	m, err := r.Download(c.Context, imp.Import.Module, version)
	if err != nil {
		return nil, "", errDiffFailed(fmt.Sprintf("warren diff: --base-module: %v", err))
	}
	label := path.Join(imp.Import.Module+"@"+version, imp.Import.Dir)
	oldDir := filepath.Join(m.Dir, filepath.FromSlash(imp.Import.Dir))
	old, err := openSide(c.Context, oldDir, genOptions(oldDir))
	if err != nil {
		reportError(c.App.ErrWriter, "diff", oldDir, err)
		return nil, "", errDiffFailed(fmt.Sprintf("warren diff: %s is not valid", label))
	}
	return old, label, nil
}

func orNone(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return strings.Join(list, ", ")
}
