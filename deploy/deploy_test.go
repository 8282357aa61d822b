// Package deploy holds ctalk's container image, platform notes and the
// scale-out recipe. Its tests check offline the mistakes that would break a
// deploy: a start command that does not start the server, a health path or
// port the server does not serve, a variable the server does not read, a
// shutdown window shorter than a waiting call, an image or a release
// (.goreleaser.yaml) built unlike the binary CI tests, a release image that
// runs unlike the image the platforms build. They read the platform files
// loosely, for those fields only: the platforms own their schemas, and this
// test does not re-model them.
package deploy

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// longestWait is the longest a tool call may block waiting for something new.
// Platforms must let a stopping replica finish such calls before killing it.
const longestWait = 120

// ---------------------------------------------------------------------------
// Facts read from the rest of the repository.

type repoFacts struct {
	dockerfile  string          // path of the Dockerfile, from the repository root
	image       *dockerImage    // what it builds
	ciBuild     string          // the static build command of .ci/run
	getRoutes   map[string]bool // paths the server answers to GET
	envNames    map[string]bool // environment variables the server reads
	defaultPort int
}

func readRepo(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", rel))
	if err != nil {
		t.Fatalf("read %s: %v", rel, err)
	}
	return string(b)
}

var (
	reRoute   = regexp.MustCompile(`\.(GET|POST|PUT|DELETE|PATCH|Any)\("(/[^"]*)"`)
	reEnvName = regexp.MustCompile(`\(\s*"([A-Z][A-Z0-9_]*)"`)
	rePort    = regexp.MustCompile(`\bPort:\s+(\d+),`)
	reCIBuild = regexp.MustCompile(`(?m)^CGO_ENABLED=0 go build [^\n]*`)
)

// routes returns every method and path registered on an echo router in the
// server's code (files that import echo, outside tests and the harness).
func routes(t *testing.T) [][2]string {
	t.Helper()
	var out [][2]string
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != ".." || d.Name() == "ctalk-bench" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil || !strings.Contains(string(b), `"github.com/labstack/echo/v4"`) {
			return err
		}
		for _, m := range reRoute.FindAllStringSubmatch(string(b), -1) {
			out = append(out, [2]string{m[1], m[2]})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatal("found no echo routes in the server's code")
	}
	return out
}

func loadRepo(t *testing.T) *repoFacts {
	t.Helper()
	r := &repoFacts{dockerfile: filepath.Join("deploy", "Dockerfile"), getRoutes: map[string]bool{}, envNames: map[string]bool{}}

	img, err := parseDockerfile(readRepo(t, r.dockerfile))
	if err != nil {
		t.Fatalf("%s: %v", r.dockerfile, err)
	}
	r.image = img
	if r.ciBuild = reCIBuild.FindString(readRepo(t, ".ci/run")); r.ciBuild == "" {
		t.Fatal(".ci/run has no line starting \"CGO_ENABLED=0 go build\"; update this test to find CI's static build")
	}
	for _, rt := range routes(t) {
		if rt[0] == "GET" || rt[0] == "Any" {
			r.getRoutes[rt[1]] = true
		}
	}

	// Every variable is read with a call such as str("HOST", ...) or
	// getenv("LOG_LEVEL") in config.go.
	config := readRepo(t, "cmd/ctalk/config.go")
	for _, m := range reEnvName.FindAllStringSubmatch(config, -1) {
		r.envNames[m[1]] = true
	}
	if !r.envNames["DATABASE_URL"] || !r.envNames["PORT"] {
		t.Fatalf("found no environment variable names in cmd/ctalk/config.go (got %v)", sortedKeys(r.envNames))
	}
	m := rePort.FindStringSubmatch(config)
	if m == nil {
		t.Fatal("found no default Port in cmd/ctalk/config.go")
	}
	r.defaultPort, _ = strconv.Atoi(m[1])
	return r
}

func sortedKeys(m map[string]bool) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// problems collects what a check finds.
type problems []string

func (p *problems) add(format string, args ...any) { *p = append(*p, fmt.Sprintf(format, args...)) }

func report(t *testing.T, errs problems) {
	t.Helper()
	for _, e := range errs {
		t.Error(e)
	}
}

// checkCommand checks that argv starts the ctalk server as the image holds it:
// "ctalk" alone serves, and so does "ctalk serve".
func checkCommand(p *problems, what string, argv []string, r *repoFacts) {
	if len(argv) == 0 {
		p.add("%s is empty", what)
		return
	}
	if argv[0] != r.image.binary {
		p.add("%s runs %q, but the image puts ctalk at %q", what, argv[0], r.image.binary)
	}
	if len(argv) > 2 || len(argv) == 2 && argv[1] != "serve" {
		p.add("%s %q does not start the server: use %q or %q", what, strings.Join(argv, " "), r.image.binary, r.image.binary+" serve")
	}
}

func checkHealthPath(p *problems, what, path string, r *repoFacts) {
	if !r.getRoutes[path] {
		p.add("%s %q is not a GET route the server registers (%s)", what, path, strings.Join(sortedKeys(r.getRoutes), ", "))
	}
}

func checkEnvName(p *problems, what, name string, r *repoFacts) {
	if !r.envNames[name] {
		p.add("%s: environment variable %q is not one that ctalk reads (%s)", what, name, strings.Join(sortedKeys(r.envNames), ", "))
	}
}

// ---------------------------------------------------------------------------
// The Dockerfile.

// dockerImage is what the Dockerfile says about the image it builds.
type dockerImage struct {
	build      string   // the RUN that builds ./cmd/ctalk
	output     string   // its -o
	binary     string   // where the final stage copies that output
	entrypoint []string // exec form
	cmd        []string // exec form
	user       string
	expose     []string
	env        []string // each ENV as written
	prebuilt   string   // where a release image copies the binary GoReleaser built
}

// rePrebuilt is the source of the COPY of GoReleaser's binary in a release
// image: its context holds each platform's binary at <os>/<arch>/ctalk.
var rePrebuilt = regexp.MustCompile(`^\$\{?TARGETPLATFORM\}?/ctalk$`)

var reOutput = regexp.MustCompile(`\s-o\s+(\S+)`)

// parseDockerfile reads the instructions it needs, joining continued lines.
// Only the final stage's ENTRYPOINT, CMD, USER, EXPOSE and COPY count.
func parseDockerfile(src string) (*dockerImage, error) {
	img := &dockerImage{}
	var copies [][]string
	for _, line := range strings.Split(strings.ReplaceAll(src, "\\\n", " "), "\n") {
		instr, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
		rest = strings.TrimSpace(rest)
		switch strings.ToUpper(instr) {
		case "FROM":
			copies, img.entrypoint, img.cmd, img.user, img.expose, img.env, img.prebuilt = nil, nil, nil, "", nil, nil, ""
		case "RUN":
			if strings.Contains(rest, "go build") && strings.Contains(rest, "./cmd/ctalk") {
				img.build = rest
				if o := reOutput.FindStringSubmatch(rest); o != nil {
					img.output = o[1]
				}
			}
		case "COPY":
			f := strings.Fields(rest)
			if strings.Contains(rest, "--from=") {
				copies = append(copies, f)
			} else if n := len(f); n >= 2 && rePrebuilt.MatchString(f[n-2]) {
				img.prebuilt = f[n-1]
			}
		case "ENV":
			img.env = append(img.env, rest)
		case "ENTRYPOINT", "CMD":
			var v []string
			if err := json.Unmarshal([]byte(rest), &v); err != nil {
				return nil, fmt.Errorf("%s %s is not in exec (JSON array) form: the image has no shell", instr, rest)
			}
			if strings.EqualFold(instr, "ENTRYPOINT") {
				img.entrypoint = v
			} else {
				img.cmd = v
			}
		case "USER":
			img.user = rest
		case "EXPOSE":
			img.expose = strings.Fields(rest)
		}
	}
	for _, c := range copies {
		if n := len(c); n >= 2 && c[n-2] == img.output && img.output != "" {
			img.binary = c[n-1]
		}
	}
	return img, nil
}

// checkImage returns every way the image disagrees with what CI builds and
// tests, and with what the platforms need.
func checkImage(img *dockerImage, r *repoFacts) problems {
	var p problems
	if img.build == "" {
		p.add("no RUN go build ... ./cmd/ctalk in the Dockerfile")
	}
	// The image must build the binary CI tested: static, and with the same
	// flags that change what is compiled.
	for _, flag := range strings.Fields(r.ciBuild) {
		if flag == "CGO_ENABLED=0" || flag == "-trimpath" || strings.HasPrefix(flag, "-tags") {
			if !strings.Contains(img.build, flag) {
				p.add("the image's go build lacks %q, which CI's static build uses", flag)
			}
		}
	}
	if img.binary == "" {
		p.add("the final stage does not COPY --from=<build stage> %s", img.output)
	}
	checkCommand(&p, "the image's ENTRYPOINT and CMD", append(slices.Clone(img.entrypoint), img.cmd...), r)
	if img.user == "" || img.user == "root" || strings.HasPrefix(img.user, "0") || strings.HasPrefix(img.user, "root:") {
		p.add("the final stage runs as %q; it must name a non-root USER", img.user)
	}
	if !slices.Contains(img.expose, strconv.Itoa(r.defaultPort)) {
		p.add("EXPOSE %v does not include the server's default port %d", img.expose, r.defaultPort)
	}
	return p
}

// checkReleaseImage returns every way the release image, which copies in
// the binary GoReleaser built, would run otherwise than the image the
// platforms build from deploy/Dockerfile (r.image).
func checkReleaseImage(img *dockerImage, r *repoFacts) problems {
	var p problems
	switch {
	case img.prebuilt == "":
		p.add("the release Dockerfile does not COPY ${TARGETPLATFORM}/ctalk, where GoReleaser puts each platform's binary")
	case img.prebuilt != r.image.binary:
		p.add("the release image puts ctalk at %q, but deploy/Dockerfile's at %q", img.prebuilt, r.image.binary)
	}
	same := func(what string, got, want []string) {
		if !slices.Equal(got, want) {
			p.add("the release image's %s is %q, but deploy/Dockerfile's is %q", what, got, want)
		}
	}
	same("ENTRYPOINT", img.entrypoint, r.image.entrypoint)
	same("CMD", img.cmd, r.image.cmd)
	same("USER", []string{img.user}, []string{r.image.user})
	same("EXPOSE", img.expose, r.image.expose)
	same("ENV", img.env, r.image.env)
	return p
}

// ---------------------------------------------------------------------------
// GoReleaser: .goreleaser.yaml (https://goreleaser.com/customization/).

type goreleaserConfig struct {
	Version int `yaml:"version"`
	Builds  []struct {
		Main   string   `yaml:"main"`
		Binary string   `yaml:"binary"`
		Env    []string `yaml:"env"`
		Flags  []string `yaml:"flags"`
		Goos   []string `yaml:"goos"`
		Goarch []string `yaml:"goarch"`
	} `yaml:"builds"`
	Dockers []struct {
		Dockerfile string   `yaml:"dockerfile"`
		Platforms  []string `yaml:"platforms"`
	} `yaml:"dockers_v2"`
}

// releaseDockerfile is the Dockerfile of the release image.
const releaseDockerfile = "deploy/Dockerfile.release"

// checkGoReleaser returns every way a release would build otherwise than
// CI's static build, miss a platform it promises, or build its image from
// a Dockerfile these tests do not check.
func checkGoReleaser(src string, r *repoFacts) problems {
	var p problems
	var c goreleaserConfig
	if err := yaml.Unmarshal([]byte(src), &c); err != nil {
		p.add("parse .goreleaser.yaml: %v", err)
		return p
	}
	if c.Version != 2 {
		p.add(".goreleaser.yaml has version %d; it is written for GoReleaser's version 2", c.Version)
	}
	if len(c.Builds) != 1 || c.Builds[0].Main != "./cmd/ctalk" || c.Builds[0].Binary != "ctalk" {
		p.add(".goreleaser.yaml must have one build, of ./cmd/ctalk into ctalk")
		return p
	}
	b := c.Builds[0]
	for _, flag := range strings.Fields(r.ciBuild) {
		switch {
		case flag == "CGO_ENABLED=0" && !slices.Contains(b.Env, flag):
			p.add("the release build's env lacks %q, which CI's static build uses", flag)
		case (flag == "-trimpath" || strings.HasPrefix(flag, "-tags")) && !slices.Contains(b.Flags, flag):
			p.add("the release build's flags lack %q, which CI's static build uses", flag)
		}
	}
	built := map[string]bool{}
	for _, goos := range b.Goos {
		for _, arch := range b.Goarch {
			built[goos+"/"+arch] = true
		}
	}
	for _, want := range []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64", "windows/amd64", "windows/arm64"} {
		if !built[want] {
			p.add("the release builds no binary for %s", want)
		}
	}
	if len(c.Dockers) == 0 {
		p.add(".goreleaser.yaml builds no image (dockers_v2)")
	}
	for _, d := range c.Dockers {
		if d.Dockerfile != releaseDockerfile {
			p.add("the release image is built from %q; build it from %s, whose checks run here", d.Dockerfile, releaseDockerfile)
		}
		for _, plat := range d.Platforms {
			if !built[plat] || !strings.HasPrefix(plat, "linux/") {
				p.add("the release image's platform %s has no Linux binary in the release build", plat)
			}
		}
		if !slices.Contains(d.Platforms, "linux/amd64") || !slices.Contains(d.Platforms, "linux/arm64") {
			p.add("the release image's platforms %v lack linux/amd64 or linux/arm64", d.Platforms)
		}
	}
	return p
}

// ---------------------------------------------------------------------------
// Railway: railway.json (https://docs.railway.com/config-as-code/reference).

type railwayConfig struct {
	Build struct {
		Builder        string `json:"builder"`
		DockerfilePath string `json:"dockerfilePath"`
	} `json:"build"`
	Deploy struct {
		StartCommand    string `json:"startCommand"`
		HealthcheckPath string `json:"healthcheckPath"`
		// Railway's parser refuses these as strings ("Expected number,
		// received string"); decoding into an int refuses them too.
		DrainingSeconds int `json:"drainingSeconds"`
	} `json:"deploy"`
}

func checkRailway(src string, r *repoFacts) problems {
	var c railwayConfig
	if err := json.Unmarshal([]byte(src), &c); err != nil {
		return problems{"railway.json: " + err.Error()}
	}
	var p problems
	if c.Build.Builder != "DOCKERFILE" || filepath.Clean(c.Build.DockerfilePath) != r.dockerfile {
		p.add("railway.json: build must use the DOCKERFILE builder with dockerfilePath %q", r.dockerfile)
	}
	// Railway runs a Dockerfile service's start command in exec form,
	// replacing the image's ENTRYPOINT: no shell, no variable expansion.
	if strings.ContainsAny(c.Deploy.StartCommand, "$&|;<>`'\"") {
		p.add("railway.json: deploy.startCommand %q needs a shell, but Railway runs it in exec form", c.Deploy.StartCommand)
	}
	checkCommand(&p, "railway.json: deploy.startCommand", strings.Fields(c.Deploy.StartCommand), r)
	checkHealthPath(&p, "railway.json: deploy.healthcheckPath", c.Deploy.HealthcheckPath, r)
	if c.Deploy.DrainingSeconds <= longestWait {
		p.add("railway.json: deploy.drainingSeconds must exceed the longest tool wait (%d s), so that SIGKILL does not cut waiting calls", longestWait)
	}
	return p
}

// ---------------------------------------------------------------------------
// Render: render.yaml, a Blueprint (https://render.com/docs/blueprint-spec).

type renderBlueprint struct {
	Services []struct {
		Name                    string `yaml:"name"`
		Type                    string `yaml:"type"`
		DockerfilePath          string `yaml:"dockerfilePath"`
		DockerCommand           string `yaml:"dockerCommand"`
		HealthCheckPath         string `yaml:"healthCheckPath"`
		MaxShutdownDelaySeconds int    `yaml:"maxShutdownDelaySeconds"`
		EnvVars                 []struct {
			Key           string `yaml:"key"`
			Value         string `yaml:"value"`
			GenerateValue bool   `yaml:"generateValue"`
			FromDatabase  *struct {
				Name     string `yaml:"name"`
				Property string `yaml:"property"`
			} `yaml:"fromDatabase"`
		} `yaml:"envVars"`
	} `yaml:"services"`
	Databases []renderDatabase `yaml:"databases"`
}

type renderDatabase struct {
	Name string `yaml:"name"`
}

func checkRender(src string, r *repoFacts) problems {
	var bp renderBlueprint
	if err := yaml.Unmarshal([]byte(src), &bp); err != nil {
		return problems{"render.yaml: " + err.Error()}
	}
	var p problems
	var web int
	for _, s := range bp.Services {
		if s.Type != "web" {
			continue
		}
		web++
		what := fmt.Sprintf("render.yaml: service %q", s.Name)
		if filepath.Clean(s.DockerfilePath) != r.dockerfile {
			p.add("%s: dockerfilePath %q is not %q", what, s.DockerfilePath, r.dockerfile)
		}
		if s.DockerCommand != "" {
			checkCommand(&p, what+": dockerCommand", strings.Fields(s.DockerCommand), r)
		}
		checkHealthPath(&p, what+": healthCheckPath", s.HealthCheckPath, r)
		if d := s.MaxShutdownDelaySeconds; d <= longestWait || d > 300 {
			p.add("%s: maxShutdownDelaySeconds %d must exceed the longest tool wait (%d s) and be at most Render's 300", what, d, longestWait)
		}
		env := map[string]string{}
		var dbURL, secretGenerated bool
		for _, v := range s.EnvVars {
			checkEnvName(&p, what, v.Key, r)
			env[v.Key] = v.Value
			switch {
			case v.Key == "DATABASE_URL" && v.FromDatabase != nil:
				declared := slices.Contains(bp.Databases, renderDatabase{Name: v.FromDatabase.Name})
				dbURL = declared && v.FromDatabase.Property == "connectionString"
			case v.Key == "SIGNUP_SECRET":
				secretGenerated = v.GenerateValue && v.Value == ""
			}
		}
		if !dbURL {
			p.add("%s: DATABASE_URL must come from a declared database's connectionString, or ctalk runs on a throwaway SQLite file", what)
		}
		if env["ALLOW_ORG_SIGNUP"] == "false" && !secretGenerated {
			p.add("%s: sign-up is closed, so SIGNUP_SECRET must be generated (generateValue: true), never written in the file", what)
		}
	}
	if web != 1 {
		p.add("render.yaml: want exactly one web service, found %d", web)
	}
	return p
}

// ---------------------------------------------------------------------------
// The scale-out recipe: nginx in front of replicas, started by compose.

func checkNginx(conf string) problems {
	conf = regexp.MustCompile(`#[^\n]*`).ReplaceAllString(conf, "")
	var p problems
	for _, d := range []string{"proxy_read_timeout", "proxy_send_timeout", "send_timeout"} {
		m := regexp.MustCompile(`(?m)^\s*` + d + `\s+(\d+)s;`).FindStringSubmatch(conf)
		if m == nil {
			p.add("nginx.conf: %s is not set in seconds", d)
		} else if n, _ := strconv.Atoi(m[1]); n <= longestWait {
			p.add("nginx.conf: %s %ss does not exceed the longest tool wait (%d s)", d, m[1], longestWait)
		}
	}
	mcp := regexp.MustCompile(`(?s)location /mcp \{(.*?)\}`).FindStringSubmatch(conf)
	if mcp == nil {
		p.add("nginx.conf: no location /mcp block")
		return p
	}
	for _, want := range []string{"proxy_buffering off;", "gzip off;"} {
		if !strings.Contains(mcp[1], want) {
			p.add("nginx.conf: location /mcp lacks %q; event streams must not be buffered or compressed", want)
		}
	}
	return p
}

type composeFile struct {
	Services map[string]struct {
		Deploy *struct {
			Replicas int `yaml:"replicas"`
		} `yaml:"deploy"`
		Environment     map[string]string `yaml:"environment"`
		StopGracePeriod string            `yaml:"stop_grace_period"`
	} `yaml:"services"`
}

func checkCompose(src string, r *repoFacts) problems {
	var c composeFile
	if err := yaml.Unmarshal([]byte(src), &c); err != nil {
		return problems{"compose.yaml: " + err.Error()}
	}
	svc, ok := c.Services["ctalk"]
	if !ok {
		return problems{"compose.yaml: no ctalk service"}
	}
	var p problems
	if svc.Deploy == nil || svc.Deploy.Replicas < 2 {
		p.add("compose.yaml: the ctalk service must run at least two replicas")
	}
	for _, k := range slices.Sorted(maps.Keys(svc.Environment)) {
		checkEnvName(&p, "compose.yaml", k, r)
	}
	if g, err := strconv.Atoi(strings.TrimSuffix(svc.StopGracePeriod, "s")); err != nil || g <= longestWait {
		p.add("compose.yaml: stop_grace_period %q must be seconds (such as 150s) exceeding the longest tool wait (%d s)", svc.StopGracePeriod, longestWait)
	}
	return p
}

// ---------------------------------------------------------------------------
// Tests.

// TestLongestWait keeps longestWait honest: the windows above are only long
// enough while no tool may wait longer than it.
func TestLongestWait(t *testing.T) {
	m := regexp.MustCompile(`(?m)^const MaxWait = (\d+) \* time\.Second`).FindStringSubmatch(readRepo(t, "wait/wait.go"))
	if m == nil {
		t.Fatal("wait/wait.go no longer declares \"const MaxWait = N * time.Second\"; update this test to read the longest wait")
	}
	if n, _ := strconv.Atoi(m[1]); n > longestWait {
		t.Errorf("wait.MaxWait is %d s, longer than longestWait (%d s): raise longestWait and every shutdown window and proxy timeout in the deployment files", n, longestWait)
	}
}

func TestDeployFiles(t *testing.T) {
	r := loadRepo(t)
	t.Run("Dockerfile", func(t *testing.T) { report(t, checkImage(r.image, r)) })
	t.Run("Dockerfile.release", func(t *testing.T) {
		img, err := parseDockerfile(readRepo(t, releaseDockerfile))
		if err != nil {
			t.Fatal(err)
		}
		report(t, checkReleaseImage(img, r))
	})
	t.Run(".goreleaser.yaml", func(t *testing.T) { report(t, checkGoReleaser(readRepo(t, ".goreleaser.yaml"), r)) })
	t.Run("railway.json", func(t *testing.T) { report(t, checkRailway(readRepo(t, "railway.json"), r)) })
	t.Run("render.yaml", func(t *testing.T) { report(t, checkRender(readRepo(t, "render.yaml"), r)) })
	t.Run("nginx.conf", func(t *testing.T) { report(t, checkNginx(readRepo(t, "deploy/nginx.conf"))) })
	t.Run("compose.yaml", func(t *testing.T) { report(t, checkCompose(readRepo(t, "deploy/compose.yaml"), r)) })
}

// TestChecksCatchMistakes breaks the real files one way at a time and
// requires the checks to notice, so that a check that can no longer fail
// does not pass unnoticed.
func TestChecksCatchMistakes(t *testing.T) {
	r := loadRepo(t)
	railway := readRepo(t, "railway.json")
	render := readRepo(t, "render.yaml")
	dockerfile := readRepo(t, r.dockerfile)
	nginx := readRepo(t, "deploy/nginx.conf")
	compose := readRepo(t, "deploy/compose.yaml")
	release := readRepo(t, releaseDockerfile)
	goreleaser := readRepo(t, ".goreleaser.yaml")

	edit := func(t *testing.T, s, pattern, repl string) string {
		t.Helper()
		re := regexp.MustCompile(pattern)
		if !re.MatchString(s) {
			t.Fatalf("the file no longer matches %q; update this test", pattern)
		}
		return re.ReplaceAllString(s, repl)
	}
	image := func(src string) problems {
		img, err := parseDockerfile(src)
		if err != nil {
			return problems{err.Error()}
		}
		rr := *r
		rr.image = img
		return checkImage(img, &rr)
	}
	releaseImage := func(src string) problems {
		img, err := parseDockerfile(src)
		if err != nil {
			return problems{err.Error()}
		}
		return checkReleaseImage(img, r)
	}

	tests := []struct {
		name string
		errs func(t *testing.T) problems
		want string // words the error must contain
	}{
		{"railway: builder", func(t *testing.T) problems {
			return checkRailway(edit(t, railway, `"DOCKERFILE"`, `"RAILPACK"`), r)
		}, "DOCKERFILE builder"},
		{"railway: start command binary", func(t *testing.T) problems {
			return checkRailway(edit(t, railway, `"/ctalk serve"`, `"/app/ctalk serve"`), r)
		}, "image puts ctalk"},
		{"railway: start command subcommand", func(t *testing.T) problems {
			return checkRailway(edit(t, railway, `"/ctalk serve"`, `"/ctalk migrate up"`), r)
		}, "does not start the server"},
		{"railway: start command needs a shell", func(t *testing.T) problems {
			return checkRailway(edit(t, railway, `"/ctalk serve"`, `"/ctalk serve --port $$PORT"`), r)
		}, "exec form"},
		{"railway: health path not served", func(t *testing.T) problems {
			return checkRailway(edit(t, railway, `"/health"`, `"/healthz"`), r)
		}, "healthcheckPath"},
		{"railway: draining shorter than a wait", func(t *testing.T) problems {
			return checkRailway(edit(t, railway, `"drainingSeconds": \d+`, `"drainingSeconds": 30`), r)
		}, "drainingSeconds"},
		{"railway: draining as a string", func(t *testing.T) problems {
			return checkRailway(edit(t, railway, `"drainingSeconds": (\d+)`, `"drainingSeconds": "$1"`), r)
		}, "drainingSeconds"},

		{"render: dockerfile path", func(t *testing.T) problems {
			return checkRender(edit(t, render, `dockerfilePath: ./deploy/Dockerfile`, "dockerfilePath: ./Dockerfile"), r)
		}, "dockerfilePath"},
		{"render: docker command binary", func(t *testing.T) problems {
			return checkRender(edit(t, render, `(?m)^    healthCheckPath:`, "    dockerCommand: ctalk serve\n    healthCheckPath:"), r)
		}, "image puts ctalk"},
		{"render: health path", func(t *testing.T) problems {
			return checkRender(edit(t, render, `healthCheckPath: /health`, "healthCheckPath: /status"), r)
		}, "healthCheckPath"},
		{"render: shutdown delay shorter than a wait", func(t *testing.T) problems {
			return checkRender(edit(t, render, `maxShutdownDelaySeconds: \d+`, "maxShutdownDelaySeconds: 60"), r)
		}, "maxShutdownDelaySeconds"},
		{"render: shutdown delay above Render's limit", func(t *testing.T) problems {
			return checkRender(edit(t, render, `maxShutdownDelaySeconds: \d+`, "maxShutdownDelaySeconds: 301"), r)
		}, "300"},
		{"render: undeclared database", func(t *testing.T) problems {
			return checkRender(edit(t, render, `(?m)^  - name: ctalk-db`, "  - name: other-db"), r)
		}, "DATABASE_URL"},
		{"render: database property", func(t *testing.T) problems {
			return checkRender(edit(t, render, `property: connectionString`, "property: host"), r)
		}, "connectionString"},
		{"render: unknown environment variable", func(t *testing.T) problems {
			return checkRender(edit(t, render, `key: LOG_LEVEL`, "key: LOGLEVEL"), r)
		}, "not one that ctalk reads"},
		{"render: closed sign-up with a written secret", func(t *testing.T) problems {
			return checkRender(edit(t, render, `(key: SIGNUP_SECRET\n\s+)generateValue: true`, "${1}value: hunter2"), r)
		}, "SIGNUP_SECRET"},

		{"image: binary elsewhere", func(t *testing.T) problems {
			return image(edit(t, dockerfile, `ENTRYPOINT \["/ctalk"\]`, `ENTRYPOINT ["/bin/ctalk"]`))
		}, "image puts ctalk"},
		{"image: shell form", func(t *testing.T) problems {
			return image(edit(t, dockerfile, `ENTRYPOINT \["/ctalk"\]`, `ENTRYPOINT /ctalk`))
		}, "exec"},
		{"image: builds another package", func(t *testing.T) problems {
			return image(edit(t, dockerfile, `\./cmd/ctalk`, "./cmd/other"))
		}, "go build"},
		{"image: cgo", func(t *testing.T) problems {
			return image(edit(t, dockerfile, `CGO_ENABLED=0`, "CGO_ENABLED=1"))
		}, "CGO_ENABLED=0"},
		{"image: untrimmed", func(t *testing.T) problems {
			return image(edit(t, dockerfile, ` -trimpath`, ""))
		}, "-trimpath"},
		{"image: root", func(t *testing.T) problems {
			return image(edit(t, dockerfile, `USER nonroot:nonroot`, "USER root"))
		}, "non-root"},
		{"image: port", func(t *testing.T) problems {
			return image(edit(t, dockerfile, `EXPOSE 8080`, "EXPOSE 3000"))
		}, "EXPOSE"},

		{"release image: no prebuilt binary", func(t *testing.T) problems {
			return releaseImage(edit(t, release, `\$\{TARGETPLATFORM\}/ctalk /ctalk`, "ctalk /ctalk"))
		}, "TARGETPLATFORM"},
		{"release image: binary elsewhere", func(t *testing.T) problems {
			return releaseImage(edit(t, release, `\$\{TARGETPLATFORM\}/ctalk /ctalk`, "$${TARGETPLATFORM}/ctalk /bin/ctalk"))
		}, "puts ctalk"},
		{"release image: other command", func(t *testing.T) problems {
			return releaseImage(edit(t, release, `CMD \["serve"\]`, `CMD ["migrate", "up"]`))
		}, "CMD"},
		{"release image: root", func(t *testing.T) problems {
			return releaseImage(edit(t, release, `USER nonroot:nonroot`, "USER root"))
		}, "USER"},
		{"release image: other database path", func(t *testing.T) problems {
			return releaseImage(edit(t, release, `RELAY_DB_PATH=/data/ctalk.db`, "RELAY_DB_PATH=/ctalk.db"))
		}, "ENV"},
		{"goreleaser: cgo", func(t *testing.T) problems {
			return checkGoReleaser(edit(t, goreleaser, `CGO_ENABLED=0`, "CGO_ENABLED=1"), r)
		}, "CGO_ENABLED=0"},
		{"goreleaser: untrimmed", func(t *testing.T) problems {
			return checkGoReleaser(edit(t, goreleaser, `(?m)^      - -trimpath\n`, ""), r)
		}, "-trimpath"},
		{"goreleaser: no arm64", func(t *testing.T) problems {
			return checkGoReleaser(edit(t, goreleaser, `goarch: \[amd64, arm64\]`, "goarch: [amd64]"), r)
		}, "arm64"},
		{"goreleaser: image from the source Dockerfile", func(t *testing.T) problems {
			return checkGoReleaser(edit(t, goreleaser, `dockerfile: deploy/Dockerfile.release`, "dockerfile: deploy/Dockerfile"), r)
		}, "Dockerfile.release"},

		{"nginx: short read timeout", func(t *testing.T) problems {
			return checkNginx(edit(t, nginx, `proxy_read_timeout \d+s;`, "proxy_read_timeout 60s;"))
		}, "proxy_read_timeout"},
		{"nginx: buffering", func(t *testing.T) problems {
			return checkNginx(edit(t, nginx, `proxy_buffering off;`, "proxy_buffering on;"))
		}, "buffered"},
		{"compose: one replica", func(t *testing.T) problems {
			return checkCompose(edit(t, compose, `replicas: 2`, "replicas: 1"), r)
		}, "two replicas"},
		{"compose: short grace period", func(t *testing.T) problems {
			return checkCompose(edit(t, compose, `stop_grace_period: \d+s`, "stop_grace_period: 10s"), r)
		}, "stop_grace_period"},
		{"compose: unknown environment variable", func(t *testing.T) problems {
			return checkCompose(edit(t, compose, `LOG_LEVEL: `, "LOGLEVEL: "), r)
		}, "not one that ctalk reads"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := tt.errs(t)
			for _, e := range errs {
				if strings.Contains(e, tt.want) {
					return
				}
			}
			t.Errorf("no error mentions %q; got %q", tt.want, errs)
		})
	}
}

// ---------------------------------------------------------------------------
// The README and the pages of docs/ must stay true of the code: these tests
// fail, saying what to write, when a variable, command, route or tool
// changes. They run
// with the rest of the suite: documentation that no longer matches the code
// is a failure like any other.

// readmeSection returns the text of a Markdown document from the heading
// that starts with start up to the next heading of the same or a higher
// level.
func readmeSection(t *testing.T, readme, start string) string {
	t.Helper()
	readme = "\n" + readme
	i := strings.Index(readme, "\n"+start)
	if i < 0 {
		t.Fatalf("no heading %q", start)
	}
	level := strings.Index(start, " ")
	rest := readme[i+1+len(start):]
	for _, line := range strings.SplitAfter(rest, "\n") {
		if strings.HasPrefix(line, "#") {
			if l := strings.Index(line, " "); l > 0 && l <= level {
				return rest[:strings.Index(rest, line)]
			}
		}
	}
	return rest
}

func TestReadmeConfiguration(t *testing.T) {
	r := loadRepo(t)
	table := readmeSection(t, readRepo(t, "docs/configuration.md"), "# Configuration")
	rows := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([A-Z][A-Z0-9_]*)` \\|").FindAllStringSubmatch(table, -1) {
		rows[m[1]] = true
	}
	for _, name := range sortedKeys(r.envNames) {
		if !rows[name] {
			t.Errorf("cmd/ctalk/config.go reads %s, but docs/configuration.md's table has no row for it", name)
		}
	}
	for _, name := range sortedKeys(rows) {
		if !r.envNames[name] {
			t.Errorf("docs/configuration.md's table describes %s, which cmd/ctalk/config.go does not read", name)
		}
	}
}

func TestReadmeCommands(t *testing.T) {
	main := readRepo(t, "cmd/ctalk/main.go")
	usage := regexp.MustCompile("(?s)const usage = `(.*?)`").FindStringSubmatch(main)
	if usage == nil {
		t.Fatal("no usage text in cmd/ctalk/main.go")
	}
	table := readmeSection(t, readRepo(t, "docs/configuration.md"), "## Commands")
	var n int
	for _, m := range regexp.MustCompile(`(?m)^\s+(ctalk(?: [a-z]+| N)*)\s{2,}`).FindAllStringSubmatch(usage[1], -1) {
		n++
		if !strings.Contains(table, "| `"+m[1]+"` |") {
			t.Errorf("the usage text lists %q, but docs/configuration.md's Commands table has no row for it", m[1])
		}
	}
	if n < 3 {
		t.Fatalf("found only %d commands in the usage text", n)
	}
}

func TestReadmeEndpoints(t *testing.T) {
	table := readmeSection(t, readRepo(t, "docs/http.md"), "# HTTP endpoints")
	for _, rt := range routes(t) {
		path := regexp.MustCompile(`:([a-z_]+)`).ReplaceAllString(rt[1], "{$1}")
		if !strings.Contains(table, "| `"+path+"` |") {
			t.Errorf("the server serves %s, but docs/http.md's table has no row for it", path)
		}
	}
}

func TestReadmeTools(t *testing.T) {
	section := readmeSection(t, readRepo(t, "docs/tools.md"), "# Tool reference")
	files, err := filepath.Glob(filepath.Join("..", "tools", "*_tools.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("found no tools/*_tools.go files (%v)", err)
	}
	tools := map[string]bool{}
	for _, f := range files {
		src := readRepo(t, filepath.Join("tools", filepath.Base(f)))
		// Each tool's options run from its NewTool to the next one.
		starts := regexp.MustCompile(`mcp\.NewTool\("([a-z_]+)"`).FindAllStringSubmatchIndex(src, -1)
		for i, st := range starts {
			name := src[st[2]:st[3]]
			tools[name] = true
			end := len(src)
			if i+1 < len(starts) {
				end = starts[i+1][0]
			}
			doc := readmeSection(t, section, "### `"+name+"`")
			opts := src[st[0]:end]
			args := regexp.MustCompile(`mcp\.With(?:String|Number|Boolean|Any|Array|Object)\("([a-z_]+)"`).FindAllStringSubmatch(opts, -1)
			for param, arg := range map[string]string{"authTokenParam": "auth_token", "messageIDParam": "message_id", "adminPasswordParam": "admin_password"} {
				if strings.Contains(opts, param) {
					args = append(args, []string{"", arg})
				}
			}
			for _, a := range args {
				if !strings.Contains(doc, "`"+a[1]+"`") {
					t.Errorf("tool %s takes argument %s, but its entry in docs/tools.md does not mention it", name, a[1])
				}
			}
		}
	}
	for _, m := range regexp.MustCompile("(?m)^### `([a-z_]+)`").FindAllStringSubmatch(section, -1) {
		if !tools[m[1]] {
			t.Errorf("docs/tools.md describes the tool %s, which no tools/*_tools.go file registers", m[1])
		}
	}
}

// TestCIFuzzesEveryTarget: .ci/run's suite skips the fuzz targets
// (-skip '^Fuzz'), whose seed corpora its fuzzing steps run, so every fuzz
// target of the repository must have a fuzzing step of its own there.
func TestCIFuzzesEveryTarget(t *testing.T) {
	ci, err := os.ReadFile("../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	step := regexp.MustCompile(`(?m)^fuzz (\S+) (Fuzz\w+) \d+$`)
	fuzzed := map[string]bool{}
	for _, m := range step.FindAllStringSubmatch(string(ci), -1) {
		fuzzed[filepath.Clean(m[1])+" "+m[2]] = true
	}
	target := regexp.MustCompile(`(?m)^func (Fuzz\w+)\(f \*testing\.F\)`)
	var targets int
	err = filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		pkg, _ := filepath.Rel("..", filepath.Dir(path))
		for _, m := range target.FindAllStringSubmatch(string(src), -1) {
			targets++
			if !fuzzed[pkg+" "+m[1]] {
				t.Errorf("%s (%s) has no fuzzing step in .ci/run, whose suite skips fuzz targets: add \"fuzz ./%s %s 10\"", m[1], path, pkg, m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if targets == 0 || len(fuzzed) == 0 {
		t.Fatalf("found %d fuzz targets and %d fuzzing steps; the patterns no longer match", targets, len(fuzzed))
	}
}
