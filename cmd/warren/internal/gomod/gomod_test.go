package gomod_test

import (
	"archive/zip"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/warrenbus/warren/cmd/warren/internal/gomod"
	"github.com/warrenbus/warren/generator/load"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// env keeps the go command off the network and out of any workspace. The
// modules these tests lay out need nothing from a proxy or the module
// cache (a requirement is replaced by a directory, or absent on purpose),
// so GOPROXY=off depends on nothing the module cache happens to hold; the
// one test that downloads brings a file:// proxy and a module cache of its
// own.
func env() []string {
	return append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off", "GOTOOLCHAIN=local")
}

func TestResolveReplacedModule(t *testing.T) {
	root := t.TempDir()
	producer := filepath.Join(root, "producer")
	write(t, filepath.Join(producer, "go.mod"), "module example.com/producer\n\ngo 1.24\n")
	write(t, filepath.Join(producer, "events", "warren.json"), `{}`)
	svc := filepath.Join(root, "svc")
	write(t, filepath.Join(svc, "go.mod"), "module example.com/svc\n\ngo 1.24\n\nrequire example.com/producer v1.3.0\n\nreplace example.com/producer => ../producer\n")
	r := &gomod.Resolver{ModuleDir: svc, Env: env()}
	res, err := r.Resolve(context.Background(), svc, &load.Import{Module: "example.com/producer", Dir: "events"})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := filepath.EvalSymlinks(filepath.Join(producer, "events"))
	if res.Dir != want || res.Module != "example.com/producer" || res.Version != "v1.3.0" || res.Replace != "../producer" {
		t.Errorf("resolved %+v, want the replacement's events directory %s, the required version and the replacement", res, want)
	}
	if _, err := res.FS.Open("warren.json"); err != nil {
		t.Errorf("the resolved FS does not hold warren.json: %v", err)
	}
}

func TestResolveModuleNotRequired(t *testing.T) {
	svc := t.TempDir()
	write(t, filepath.Join(svc, "go.mod"), "module example.com/svc\n\ngo 1.24\n")
	r := &gomod.Resolver{ModuleDir: svc, Env: env()}
	_, err := r.Resolve(context.Background(), svc, &load.Import{Module: "example.com/catalogue-events", Dir: "events"})
	if err == nil || !strings.Contains(err.Error(), "module example.com/catalogue-events is not required by the service's go.mod: run go get example.com/catalogue-events") {
		t.Errorf("err = %v, want one naming the go get to run", err)
	}
}

func TestResolvePathImport(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "catalogue", "warren.json"), `{}`)
	r := &gomod.Resolver{ModuleDir: root, Env: env()}
	res, err := r.Resolve(context.Background(), filepath.Join(root, "svc"), &load.Import{Path: "../catalogue"})
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := filepath.EvalSymlinks(filepath.Join(root, "catalogue")); res.Dir != want || res.Module != "" {
		t.Errorf("resolved %+v, want %s", res, want)
	}
}

func TestResolveOutsideAModule(t *testing.T) {
	dir := t.TempDir()
	r := &gomod.Resolver{ModuleDir: dir, Env: env()}
	_, err := r.Resolve(context.Background(), dir, &load.Import{Module: "example.com/catalogue-events"})
	if err == nil || !strings.Contains(err.Error(), "there is none in "+dir+" or above it (go mod init, then go get example.com/catalogue-events)") {
		t.Errorf("err = %v", err)
	}
}

// A module the service requires but the module cache does not hold yet is
// downloaded (go mod download, through GOPROXY: here a file:// proxy the
// test lays out), at the version go.mod pins.
func TestResolveDownloadsARequiredModule(t *testing.T) {
	proxy := t.TempDir()
	at := filepath.Join(proxy, "example.com", "catalogue", "@v")
	var zbuf bytes.Buffer
	zw := zip.NewWriter(&zbuf)
	for name, content := range map[string]string{"go.mod": "module example.com/catalogue\n", "events/warren.json": "{}"} {
		w, err := zw.Create("example.com/catalogue@v1.2.0/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(content)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(at, "list"), "v1.2.0\n")
	write(t, filepath.Join(at, "v1.2.0.info"), `{"Version": "v1.2.0"}`)
	write(t, filepath.Join(at, "v1.2.0.mod"), "module example.com/catalogue\n")
	write(t, filepath.Join(at, "v1.2.0.zip"), zbuf.String())
	cache := t.TempDir()
	e := append(env(), "GOPROXY=file://"+proxy, "GONOSUMDB=example.com", "GOMODCACHE="+cache)
	t.Cleanup(func() {
		cmd := exec.Command("go", "clean", "-modcache")
		cmd.Env = e
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("go clean -modcache: %v\n%s", err, out)
		}
	})
	svc := t.TempDir()
	write(t, filepath.Join(svc, "go.mod"), "module example.com/svc\n\ngo 1.24\n\nrequire example.com/catalogue v1.2.0\n")
	r := &gomod.Resolver{ModuleDir: svc, Env: e}
	res, err := r.Resolve(context.Background(), svc, &load.Import{Module: "example.com/catalogue", Dir: "events"})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(cache, "example.com", "catalogue@v1.2.0", "events"); res.Dir != want || res.Version != "v1.2.0" {
		t.Errorf("resolved %+v, want %s at v1.2.0", res, want)
	}
}

// A module that cannot be downloaded is an error with the go command's
// reason, which go mod download -json gives only in its JSON output.
func TestDownloadFailureSaysWhy(t *testing.T) {
	svc := t.TempDir()
	write(t, filepath.Join(svc, "go.mod"), "module example.com/svc\n\ngo 1.24\n\nrequire example.com/absent v1.0.0\n")
	r := &gomod.Resolver{ModuleDir: svc, Env: append(env(), "GOMODCACHE="+t.TempDir())}
	_, err := r.Download(context.Background(), "example.com/absent", "v1.0.0")
	if err == nil || !strings.Contains(err.Error(), "example.com/absent@v1.0.0") || !strings.Contains(err.Error(), "GOPROXY=off") {
		t.Fatalf("download of a module that cannot be downloaded: %v, want the module, its version and the go command's reason (GOPROXY=off)", err)
	}
}
