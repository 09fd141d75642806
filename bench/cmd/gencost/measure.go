package main

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// sides are the generators compared, warren first, and the floor (see
// floor.go), which is measured for generation only.
var sides = []string{"warren", "asyncapi-codegen", "go-jsonschema", "floor"}

type runner struct {
	bin, work, root string
	versions        map[string]string
	rounds          int
	generate, build []int

	inputs  map[int]input
	floors  map[int]string    // fact count -> the floor's list of files
	skip    map[string]string // "build/100/side" -> why it is not measured
	rawFile io.Writer
}

func (r *runner) run() error {
	if err := os.MkdirAll(r.work, 0o755); err != nil {
		return err
	}
	// The script keeps its binaries in work too: empty only what is ours.
	for _, d := range []string{"input", "gen", "build", "cache", "rounds.txt"} {
		if err := os.RemoveAll(filepath.Join(r.work, d)); err != nil {
			return err
		}
	}
	// A module of its own, so that the go command's ./... in an enclosing
	// module (bench's go vet and go test) does not enter the generated
	// packages, some of which import what that module does not require.
	if err := os.WriteFile(filepath.Join(r.work, "go.mod"), []byte("module gencost.example/work\n\ngo 1.25.0\n"), 0o644); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(r.work, "rounds.txt"))
	if err != nil {
		return err
	}
	defer f.Close()
	r.rawFile = io.MultiWriter(f, os.Stderr)
	r.skip = map[string]string{}
	r.logf("# gencost %s", time.Now().UTC().Format("2006-01-02 15:04 MST"))
	var vs []string
	for _, s := range sides {
		vs = append(vs, s+"="+orDash(r.versions[s]))
	}
	r.logf("# versions %s", strings.Join(vs, " "))

	r.inputs = map[int]input{}
	for _, n := range union(r.generate, r.build) {
		in, err := writeInput(filepath.Join(r.work, "input", fmt.Sprint(n)), r.tool("warren"), n)
		if err != nil {
			return fmt.Errorf("input of %d facts: %w", n, err)
		}
		r.inputs[n] = in
	}
	r.floors = map[int]string{}
	for _, n := range r.generate {
		list, err := r.writeFloorList(n)
		if err != nil {
			r.skip[key("generate", n, "floor")] = err.Error()
			r.logf("# unmeasured generate facts=%d side=floor: %s", n, oneLine(err.Error()))
			continue
		}
		r.floors[n] = list
	}
	for _, n := range r.build {
		r.skip[key("build", n, "floor")] = "the floor only writes files"
	}
	if len(r.build) > 0 {
		for _, side := range sides {
			if side == "floor" {
				continue
			}
			if err := r.prepareBuild(side); err != nil {
				for _, n := range r.build {
					r.skip[key("build", n, side)] = err.Error()
				}
				r.logf("# unmeasured build side=%s: %s", side, oneLine(err.Error()))
			}
		}
	}

	for round := 1; round <= r.rounds; round++ {
		load, _ := os.ReadFile("/proc/loadavg")
		r.logf("# round %d of %d at %s, load %s", round, r.rounds, time.Now().UTC().Format("15:04:05 MST"), strings.Join(strings.Fields(string(load))[:3], " "))
		order := rotate(sides, round-1)
		for _, n := range r.generate {
			for _, side := range order {
				if _, ok := r.skip[key("generate", n, side)]; ok {
					continue
				}
				if err := r.measureGenerate(round, n, side); err != nil {
					r.skip[key("generate", n, side)] = err.Error()
					r.logf("# unmeasured generate facts=%d side=%s: %s", n, side, oneLine(err.Error()))
				}
			}
		}
		for _, n := range r.build {
			for _, side := range order {
				if _, ok := r.skip[key("build", n, side)]; ok {
					continue
				}
				if err := r.measureBuild(round, n, side); err != nil {
					r.skip[key("build", n, side)] = err.Error()
					r.logf("# unmeasured build facts=%d side=%s: %s", n, side, oneLine(err.Error()))
				}
			}
		}
	}
	return nil
}

func (r *runner) logf(format string, args ...any) {
	fmt.Fprintf(r.rawFile, format+"\n", args...)
}

func (r *runner) tool(side string) string { return filepath.Join(r.bin, side) }

// generateCmd is the command that generates the package of n facts into out.
func (r *runner) generateCmd(side string, n int, out string) *exec.Cmd {
	in := r.inputs[n]
	switch side {
	case "warren":
		return command(r.tool(side), "generate", "--out", out, in.schemas)
	case "asyncapi-codegen":
		return command(r.tool(side), "-i", in.doc, "-p", "synthetic", "-o", filepath.Join(out, "asyncapi.gen.go"))
	case "go-jsonschema":
		return command(r.tool(side), append([]string{"-p", "synthetic", "-o", filepath.Join(out, "types.go")}, in.files...)...)
	case "floor":
		self, err := os.Executable()
		if err != nil {
			self = os.Args[0]
		}
		return command(self, "-floor", r.floors[n], in.schemas, out)
	}
	panic("unknown side " + side)
}

// measureGenerate times one whole generator process writing the package of
// n facts into an empty directory, then counts what it wrote.
func (r *runner) measureGenerate(round, n int, side string) error {
	out := filepath.Join(r.work, "gen", side, fmt.Sprint(n))
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	wall, cpu, err := timed(r.generateCmd(side, n, out))
	if err != nil {
		return err
	}
	files, lines, err := countLines(out)
	if err != nil {
		return err
	}
	if files == 0 {
		return fmt.Errorf("wrote no .go file")
	}
	r.logf("generate facts=%d side=%s round=%d wall=%.3f cpu=%.3f files=%d lines=%d", n, side, round, wall.Seconds(), cpu.Seconds(), files, lines)
	return nil
}

// The build of a side's packages happens in a module of the side's own
// (build/SIDE), which requires only what its generated code imports, at the
// versions a user would get: warren from the module being measured,
// asyncapi-codegen at the version of its generator, nothing for
// go-jsonschema. Its cache (cache/SIDE/template) is warmed once with every
// package the generated packages depend on, the standard library included;
// each measured build gets a fresh copy of it, so that the generated
// package, and only it, is compiled.
func (r *runner) prepareBuild(side string) error {
	mod := filepath.Join(r.work, "build", side)
	if err := os.MkdirAll(mod, 0o755); err != nil {
		return err
	}
	gomod := "module gencost.example/" + side + "\n\ngo 1.25.0\n"
	switch side {
	case "warren":
		gomod += "\nrequire github.com/warrenbus/warren v0.0.0\n\nreplace github.com/warrenbus/warren => " + r.root + "\n"
	case "asyncapi-codegen":
		v := r.versions[side]
		if v == "" {
			return fmt.Errorf("no -versions for asyncapi-codegen: its generated code needs its module at the generator's version")
		}
		gomod += "\nrequire github.com/lerenn/asyncapi-codegen " + v + "\n"
	}
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte(gomod), 0o644); err != nil {
		return err
	}
	var pkgs []string
	for _, n := range r.build {
		dir := filepath.Join(mod, fmt.Sprintf("p%d", n))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if out, err := r.generateCmd(side, n, dir).CombinedOutput(); err != nil {
			return fmt.Errorf("generating %d facts: %v\n%s", n, err, out)
		}
		pkgs = append(pkgs, "./"+filepath.Base(dir))
	}
	if err := goCmd(mod, "", "mod", "tidy"); err != nil {
		return err
	}
	template := filepath.Join(r.work, "cache", side, "template")
	if err := os.MkdirAll(template, 0o755); err != nil {
		return err
	}
	list := command("go", append([]string{"list", "-deps", "-f", "{{if not .Module}}{{.ImportPath}}{{else if not .Module.Main}}{{.ImportPath}}{{end}}"}, pkgs...)...)
	list.Dir = mod
	list.Env = append(list.Env, "GOCACHE="+template)
	var stderr bytes.Buffer
	list.Stderr = &stderr
	out, err := list.Output()
	if err != nil {
		return fmt.Errorf("go list -deps: %v\n%s", err, stderr.Bytes())
	}
	deps := strings.Fields(string(out))
	if err := goCmd(mod, template, append([]string{"build"}, deps...)...); err != nil {
		return fmt.Errorf("building the dependencies: %w", err)
	}
	// One build of each package, untimed: it fails here rather than in a
	// round if the generated code does not compile.
	for _, n := range r.build {
		if _, _, err := r.buildOnce(side, n); err != nil {
			return fmt.Errorf("%d facts: %w", n, err)
		}
	}
	return nil
}

// buildOnce builds the package of n facts with a fresh copy of the side's
// warmed cache and returns the go command's wall clock and CPU time (its
// own and that of the compiler and the other tools it waited for).
func (r *runner) buildOnce(side string, n int) (wall, cpu time.Duration, err error) {
	cache := filepath.Join(r.work, "cache", side)
	run := filepath.Join(cache, "run")
	if err := os.RemoveAll(run); err != nil {
		return 0, 0, err
	}
	if out, err := command("cp", "-a", filepath.Join(cache, "template"), run).CombinedOutput(); err != nil {
		return 0, 0, fmt.Errorf("copying the cache: %v\n%s", err, out)
	}
	cmd := command("go", "build", fmt.Sprintf("./p%d", n))
	cmd.Dir = filepath.Join(r.work, "build", side)
	cmd.Env = append(cmd.Env, "GOCACHE="+run)
	return timed(cmd)
}

func (r *runner) measureBuild(round, n int, side string) error {
	wall, cpu, err := r.buildOnce(side, n)
	if err != nil {
		return err
	}
	r.logf("build facts=%d side=%s round=%d wall=%.3f cpu=%.3f", n, side, round, wall.Seconds(), cpu.Seconds())
	return nil
}

// command is exec.Command with the environment every run shares: the
// machine's Go, never a toolchain download.
func command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local")
	return cmd
}

// goCmd runs the go command in dir (with GOCACHE=cache unless empty).
func goCmd(dir, cache string, args ...string) error {
	cmd := command("go", args...)
	cmd.Dir = dir
	if cache != "" {
		cmd.Env = append(cmd.Env, "GOCACHE="+cache)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %v\n%s", args[0], err, out)
	}
	return nil
}

// timed runs cmd and returns its wall clock and its CPU time, user and
// system, of the process and the children it waited for.
func timed(cmd *exec.Cmd) (wall, cpu time.Duration, err error) {
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err = cmd.Run()
	wall = time.Since(start)
	if err != nil {
		return 0, 0, fmt.Errorf("%s: %v\n%s", filepath.Base(cmd.Path), err, out.Bytes())
	}
	return wall, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), nil
}

// countLines counts the .go files below dir and their lines, as wc -l does
// (newline bytes).
func countLines(dir string) (files, lines int, err error) {
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		lines += bytes.Count(src, []byte{'\n'})
		return nil
	})
	return files, lines, err
}

// rotate returns s starting at its k-th element (modulo its length).
func rotate(s []string, k int) []string {
	k %= len(s)
	return append(slices.Clone(s[k:]), s[:k]...)
}

func union(a, b []int) []int {
	out := slices.Concat(a, b)
	slices.Sort(out)
	return slices.Compact(out)
}

func key(kind string, n int, side string) string { return fmt.Sprintf("%s/%d/%s", kind, n, side) }

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
