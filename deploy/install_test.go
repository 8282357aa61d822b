package deploy

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gofrs/flock"
	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

// installVersion is the made-up release that TestGoInstall installs: a
// tag's form, vX.Y.Z, whose major version is 0 or 1, as the module path
// has no /vN suffix.
const installVersion = "v0.999.0"

// TestGoInstall does what a user's "go install MODULE/cmd/ctalk@vX.Y.Z"
// does (docs/releasing.md, "Installing"), for real: it makes the module zip
// of this checkout at installVersion, as the module proxy would serve a
// tag of it, serves it from a folder laid out as a module proxy, installs
// the command from there without a C compiler, and runs its version
// command. It fails when the zip lacks a file the build needs (one git
// does not track, or under a folder with its own go.mod, which module zips
// leave out), when go.mod holds a directive go install refuses (replace,
// exclude), and when the version printed is not the one the docs promise.
//
// The dependencies come from this machine's module cache (go mod download
// fills it first, checked against go.sum), so that the test needs no
// network and extracts nothing; the checksum database is not asked. ctalk
// itself is in that cache at installVersion only while the test runs
// (holdModule). The build cache is shared too, and -trimpath matches CI's
// builds, so that only what changed compiles again.
func TestGoInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: go install compiles the server")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH to install with")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	gomod := []byte(readRepo(t, "go.mod"))
	mod := module.Version{Path: modfile.ModulePath(gomod), Version: installVersion}
	want := promisedVersion(t, mod)
	run(t, root, nil, goBin, "mod", "download")
	modcache := strings.TrimSpace(run(t, root, nil, goBin, "env", "GOMODCACHE"))

	tmp := t.TempDir()
	proxy := filepath.Join(tmp, "proxy")
	writeProxy(t, proxy, mod, gomod, moduleZip(t, root, mod))
	holdModule(t, modcache, mod)
	run(t, tmp, []string{
		"GOPROXY=" + fileURL(proxy) + ",off", "GOSUMDB=off", "GONOPROXY=", "GOPRIVATE=",
		"GOBIN=" + filepath.Join(tmp, "bin"),
		"GOFLAGS=-trimpath -modcacherw", // writable, so that forgetModule can remove it
		"CGO_ENABLED=0", "GOTOOLCHAIN=local",
	}, goBin, "install", mod.Path+"/cmd/ctalk@"+mod.Version)

	got := strings.TrimSpace(run(t, tmp, nil, filepath.Join(tmp, "bin", "ctalk"), "version"))
	if got != want {
		t.Errorf("after go install, ctalk version printed\n\t%s\nbut docs/releasing.md (Installing) says it prints\n\t%s", got, want)
	}
}

// promisedVersion returns what docs/releasing.md's "Installing" says
// "ctalk version" prints after go install at mod's version, and checks
// that it and the README give the command the test runs.
func promisedVersion(t *testing.T, mod module.Version) string {
	t.Helper()
	install := "go install " + mod.Path + "/cmd/ctalk@vX.Y.Z"
	for _, doc := range []string{"README.md", "docs/releasing.md"} {
		if !strings.Contains(readRepo(t, doc), install) {
			t.Errorf("%s no longer says %q: update it or this test", doc, install)
		}
	}
	doc := strings.Join(strings.Fields(readmeSection(t, readRepo(t, "docs/releasing.md"), "## Installing")), " ")
	m := regexp.MustCompile("`(ctalk vX\\.Y\\.Z \\([^`]*\\))`").FindStringSubmatch(doc)
	if m == nil {
		t.Fatal("docs/releasing.md's \"Installing\" no longer says, as `ctalk vX.Y.Z (...)`, what ctalk version prints after go install")
	}
	return strings.ReplaceAll(m[1], "vX.Y.Z", mod.Version)
}

// run runs name with args in dir, with env added to the test's
// environment, and returns its standard output; it fails the test, with
// the command's output, if the command fails.
func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s%s", filepath.Base(name), strings.Join(args, " "), err, out, stderr.Bytes())
	}
	return string(out)
}

// moduleZip returns the module zip of root at mod made of the files git
// tracks, as they are on disk: what a commit of the checkout holds, and so
// what the module proxy would serve of its tag (git archive, which the
// proxy's zip comes from, would also leave out files that .gitattributes
// marks export-ignore; the repository marks none). Without git (a copy of
// the source), it zips every file under root.
func moduleZip(t *testing.T, root string, mod module.Version) []byte {
	t.Helper()
	var zip bytes.Buffer
	tracked, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		t.Logf("git ls-files: %v; zipping every file under %s", err, root)
		err = modzip.CreateFromDir(&zip, mod, root)
	} else {
		var files []modzip.File
		for p := range strings.SplitSeq(strings.TrimSuffix(string(tracked), "\x00"), "\x00") {
			if info, err := os.Lstat(filepath.Join(root, p)); err == nil { // not deleted
				files = append(files, diskFile{root, p, info})
			}
		}
		err = modzip.Create(&zip, mod, files)
	}
	if err != nil {
		t.Fatalf("module zip: %v", err)
	}
	return zip.Bytes()
}

// diskFile is a file of the checkout as modzip.Create reads it.
type diskFile struct {
	root, path string // path is slash-separated, from root
	info       fs.FileInfo
}

func (f diskFile) Path() string                { return f.path }
func (f diskFile) Lstat() (fs.FileInfo, error) { return f.info, nil }
func (f diskFile) Open() (io.ReadCloser, error) {
	return os.Open(filepath.Join(f.root, filepath.FromSlash(f.path)))
}

// writeProxy lays out dir as a module proxy (GOPROXY=file://dir) that
// serves mod: its version list, .info, .mod and .zip.
func writeProxy(t *testing.T, dir string, mod module.Version, gomod, zip []byte) {
	t.Helper()
	at := filepath.Join(dir, escaped(t, mod.Path), "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{
		"list":                []byte(mod.Version + "\n"),
		mod.Version + ".info": fmt.Appendf(nil, `{"Version":%q,"Time":"2026-01-01T00:00:00Z"}`, mod.Version),
		mod.Version + ".mod":  gomod,
		mod.Version + ".zip":  zip,
	} {
		if err := os.WriteFile(filepath.Join(at, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// holdModule keeps mod in the module cache for this test alone until it
// ends, against another test process (CI's two passes run at once), and
// removes it from the cache now and at the end, so that go install reads
// it from the proxy rather than from an earlier run's copy.
func holdModule(t *testing.T, modcache string, mod module.Version) {
	t.Helper()
	dl := filepath.Join(modcache, "cache", "download", escaped(t, mod.Path), "@v")
	if err := os.MkdirAll(dl, 0o755); err != nil {
		t.Fatal(err)
	}
	lock := flock.New(filepath.Join(dl, "install-test.lock"))
	if err := lock.Lock(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lock.Unlock() })
	forgetModule(t, modcache, dl, mod)
	t.Cleanup(func() { forgetModule(t, modcache, dl, mod) })
}

// forgetModule removes mod's files from the module cache (modcache, its
// download folder dl) and its line from the folder's version list.
func forgetModule(t *testing.T, modcache, dl string, mod module.Version) {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(dl, mod.Version+".*"))
	for _, p := range append(paths, filepath.Join(modcache, escaped(t, mod.Path)+"@"+mod.Version)) {
		if err := os.RemoveAll(p); err != nil {
			t.Fatalf("remove ctalk at %s from the module cache: %v", mod.Version, err)
		}
	}
	if list, err := os.ReadFile(filepath.Join(dl, "list")); err == nil {
		list = bytes.ReplaceAll(list, []byte(mod.Version+"\n"), nil)
		if err := os.WriteFile(filepath.Join(dl, "list"), list, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// fileURL is the file:// URL of the folder dir, for GOPROXY.
func fileURL(dir string) string {
	dir = filepath.ToSlash(dir)
	if !strings.HasPrefix(dir, "/") {
		dir = "/" + dir // C:/... on Windows
	}
	return "file://" + dir
}

// escaped is the module path as the module cache and proxies spell it in
// their folders (capital letters escaped), in the OS's form.
func escaped(t *testing.T, path string) string {
	t.Helper()
	esc, err := module.EscapePath(path)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.FromSlash(esc)
}
