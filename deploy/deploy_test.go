// Package deploy holds ctalk's container image, platform notes and the
// scale-out recipe. Its tests check the deployment files offline: the
// platform configurations decode strictly into the fields the platforms
// document, and they agree with the Dockerfile and with the server's code.
package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
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
// Railway: railway.json, config as code.
// https://docs.railway.com/config-as-code/reference

type railwayConfig struct {
	Schema       string                     `json:"$schema"`
	Build        *railwayBuild              `json:"build"`
	Deploy       *railwayDeploy             `json:"deploy"`
	Environments map[string]railwayOverride `json:"environments"`
}

type railwayOverride struct {
	Build  *railwayBuild  `json:"build"`
	Deploy *railwayDeploy `json:"deploy"`
}

type railwayBuild struct {
	Builder            string          `json:"builder"`
	WatchPatterns      []string        `json:"watchPatterns"`
	BuildCommand       *string         `json:"buildCommand"`
	DockerfilePath     *string         `json:"dockerfilePath"`
	RailpackVersion    *string         `json:"railpackVersion"`
	NixpacksConfigPath *string         `json:"nixpacksConfigPath"`
	NixpacksPlan       json.RawMessage `json:"nixpacksPlan"`
	NixpacksVersion    *string         `json:"nixpacksVersion"`
}

type railwayDeploy struct {
	StartCommand            *string                   `json:"startCommand"`
	PreDeployCommand        []string                  `json:"preDeployCommand"`
	MultiRegionConfig       map[string]railwayReplica `json:"multiRegionConfig"`
	HealthcheckPath         *string                   `json:"healthcheckPath"`
	HealthcheckTimeout      *int                      `json:"healthcheckTimeout"`
	RestartPolicyType       string                    `json:"restartPolicyType"`
	RestartPolicyMaxRetries *int                      `json:"restartPolicyMaxRetries"`
	CronSchedule            *string                   `json:"cronSchedule"`
	// The reference shows overlapSeconds and drainingSeconds as strings, but
	// Railway's parser refuses strings ("Expected number, received string"),
	// so they decode as numbers here.
	OverlapSeconds  *int `json:"overlapSeconds"`
	DrainingSeconds *int `json:"drainingSeconds"`
}

type railwayReplica struct {
	NumReplicas int `json:"numReplicas"`
}

func decodeRailway(b []byte) (*railwayConfig, error) {
	var c railwayConfig
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("railway.json: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("railway.json: more than one JSON value")
	}
	// encoding/json matches field names without regard to case, so
	// "healthCheckPath" would pass for "healthcheckPath"; Railway's parser
	// is not so lenient.
	var raw any
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("railway.json: %w", err)
	}
	if err := exactKeys(raw, reflect.TypeOf(c), "railway.json"); err != nil {
		return nil, err
	}
	return &c, nil
}

// exactKeys reports the first object key in v that is not spelt exactly as
// a json tag of the struct type t that it decodes into.
func exactKeys(v any, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == reflect.TypeOf(json.RawMessage{}) {
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, _ := v.(map[string]any)
		fields := map[string]reflect.Type{}
		for i := range t.NumField() {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
			fields[name] = t.Field(i).Type
		}
		for k, sub := range obj {
			ft, ok := fields[k]
			if !ok {
				return fmt.Errorf("%s: unknown field %q (field names are case-sensitive)", path, k)
			}
			if err := exactKeys(sub, ft, path+"."+k); err != nil {
				return err
			}
		}
	case reflect.Map:
		obj, _ := v.(map[string]any)
		for k, sub := range obj {
			if err := exactKeys(sub, t.Elem(), path+"."+k); err != nil {
				return err
			}
		}
	case reflect.Slice:
		arr, _ := v.([]any)
		for i, sub := range arr {
			if err := exactKeys(sub, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkRailway returns every way c disagrees with the platform's rules or
// with this repository.
func checkRailway(c *railwayConfig, r *repoFacts) []string {
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }

	if c.Schema != "https://railway.com/railway.schema.json" {
		bad("$schema is %q, want https://railway.com/railway.schema.json", c.Schema)
	}
	if c.Build == nil || c.Deploy == nil {
		bad("both build and deploy sections are needed")
		return errs
	}
	if c.Build.Builder != "DOCKERFILE" {
		bad("build.builder is %q; ctalk deploys from its Dockerfile, so it must be DOCKERFILE", c.Build.Builder)
	}
	if c.Build.DockerfilePath == nil || filepath.Clean(*c.Build.DockerfilePath) != r.dockerfile {
		bad("build.dockerfilePath must be %q", r.dockerfile)
	}

	d := c.Deploy
	if d.StartCommand == nil {
		bad("deploy.startCommand is missing")
	} else {
		// Railway runs a Dockerfile service's start command in exec form,
		// replacing the image's ENTRYPOINT: no shell, no variable expansion.
		if strings.ContainsAny(*d.StartCommand, "$&|;<>`'\"") {
			bad("deploy.startCommand %q needs a shell, but Railway runs it in exec form", *d.StartCommand)
		}
		errs = append(errs, checkCommand("deploy.startCommand", strings.Fields(*d.StartCommand), r)...)
	}
	if d.HealthcheckPath == nil || !r.getRoutes[*d.HealthcheckPath] {
		bad("deploy.healthcheckPath must be a GET route the server registers (%s)", routeList(r.getRoutes))
	}
	if d.HealthcheckTimeout == nil || *d.HealthcheckTimeout < 10 {
		bad("deploy.healthcheckTimeout must be set, at least 10 s (migrations run at start)")
	}
	if !slices.Contains([]string{"ON_FAILURE", "ALWAYS", "NEVER"}, d.RestartPolicyType) {
		bad("deploy.restartPolicyType %q is not ON_FAILURE, ALWAYS or NEVER", d.RestartPolicyType)
	} else if d.RestartPolicyType == "NEVER" {
		bad("deploy.restartPolicyType NEVER leaves a crashed server down")
	}
	if d.RestartPolicyType == "ON_FAILURE" && (d.RestartPolicyMaxRetries == nil || *d.RestartPolicyMaxRetries < 1) {
		bad("deploy.restartPolicyMaxRetries must be at least 1 with ON_FAILURE")
	}
	if d.DrainingSeconds == nil || *d.DrainingSeconds <= longestWait {
		bad("deploy.drainingSeconds must exceed the longest tool wait (%d s), so that SIGKILL does not cut waiting calls", longestWait)
	}
	if d.CronSchedule != nil {
		bad("deploy.cronSchedule would make the server a cron job")
	}
	return errs
}

// ---------------------------------------------------------------------------
// Render: render.yaml, a Blueprint.
// https://render.com/docs/blueprint-spec

type renderBlueprint struct {
	Services     []renderService  `yaml:"services"`
	Databases    []renderDatabase `yaml:"databases"`
	EnvVarGroups []renderEnvGroup `yaml:"envVarGroups"`
	Previews     *renderPreviews  `yaml:"previews"`
	// Projects and ungrouped resources are not used by ctalk's Blueprint;
	// they are accepted but not checked.
	Projects  []yaml.Node `yaml:"projects"`
	Ungrouped *yaml.Node  `yaml:"ungrouped"`
}

type renderPreviews struct {
	Generation      string `yaml:"generation"`
	ExpireAfterDays int    `yaml:"expireAfterDays"`
	NumInstances    *int   `yaml:"numInstances"`
	Plan            string `yaml:"plan"`
}

type renderService struct {
	Name                    string              `yaml:"name"`
	Type                    string              `yaml:"type"`
	Runtime                 string              `yaml:"runtime"`
	Env                     string              `yaml:"env"`
	Plan                    string              `yaml:"plan"`
	Previews                *renderPreviews     `yaml:"previews"`
	BuildCommand            string              `yaml:"buildCommand"`
	StartCommand            string              `yaml:"startCommand"`
	Schedule                string              `yaml:"schedule"`
	PreDeployCommand        string              `yaml:"preDeployCommand"`
	Region                  string              `yaml:"region"`
	Repo                    string              `yaml:"repo"`
	Branch                  string              `yaml:"branch"`
	AutoDeploy              *bool               `yaml:"autoDeploy"`
	AutoDeployTrigger       string              `yaml:"autoDeployTrigger"`
	Domains                 []string            `yaml:"domains"`
	HealthCheckPath         string              `yaml:"healthCheckPath"`
	MaxShutdownDelaySeconds *int                `yaml:"maxShutdownDelaySeconds"`
	DockerCommand           string              `yaml:"dockerCommand"`
	DockerfilePath          string              `yaml:"dockerfilePath"`
	DockerContext           string              `yaml:"dockerContext"`
	RegistryCredential      *renderRegistryCred `yaml:"registryCredential"`
	Image                   *renderImage        `yaml:"image"`
	NumInstances            *int                `yaml:"numInstances"`
	Scaling                 *renderScaling      `yaml:"scaling"`
	BuildFilter             *renderBuildFilter  `yaml:"buildFilter"`
	RootDir                 string              `yaml:"rootDir"`
	Disk                    *renderDisk         `yaml:"disk"`
	EnvVars                 []renderEnvVar      `yaml:"envVars"`
	StaticPublishPath       string              `yaml:"staticPublishPath"`
	Headers                 []yaml.Node         `yaml:"headers"`
	Routes                  []yaml.Node         `yaml:"routes"`
	IPAllowList             *[]renderIPAllow    `yaml:"ipAllowList"`
	MaxmemoryPolicy         string              `yaml:"maxmemoryPolicy"`
	PreviewPlan             string              `yaml:"previewPlan"`
}

type renderRegistryCred struct {
	FromRegistryCreds struct {
		Name string `yaml:"name"`
	} `yaml:"fromRegistryCreds"`
}

type renderImage struct {
	URL   string              `yaml:"url"`
	Creds *renderRegistryCred `yaml:"creds"`
}

type renderScaling struct {
	MinInstances        int `yaml:"minInstances"`
	MaxInstances        int `yaml:"maxInstances"`
	TargetMemoryPercent int `yaml:"targetMemoryPercent"`
	TargetCPUPercent    int `yaml:"targetCPUPercent"`
}

type renderBuildFilter struct {
	Paths        []string `yaml:"paths"`
	IgnoredPaths []string `yaml:"ignoredPaths"`
}

type renderDisk struct {
	Name      string `yaml:"name"`
	MountPath string `yaml:"mountPath"`
	SizeGB    int    `yaml:"sizeGB"`
}

type renderEnvVar struct {
	Key           string          `yaml:"key"`
	Value         *string         `yaml:"value"`
	GenerateValue *bool           `yaml:"generateValue"`
	Sync          *bool           `yaml:"sync"`
	FromDatabase  *renderFromDB   `yaml:"fromDatabase"`
	FromService   *renderFromServ `yaml:"fromService"`
	FromGroup     string          `yaml:"fromGroup"`
}

type renderFromDB struct {
	Name     string `yaml:"name"`
	Property string `yaml:"property"`
}

type renderFromServ struct {
	Name      string `yaml:"name"`
	Type      string `yaml:"type"`
	Property  string `yaml:"property"`
	EnvVarKey string `yaml:"envVarKey"`
}

type renderEnvGroup struct {
	Name    string         `yaml:"name"`
	EnvVars []renderEnvVar `yaml:"envVars"`
}

type renderDatabase struct {
	Name                 string           `yaml:"name"`
	Plan                 string           `yaml:"plan"`
	PreviewPlan          string           `yaml:"previewPlan"`
	DiskSizeGB           *int             `yaml:"diskSizeGB"`
	PreviewDiskSizeGB    *int             `yaml:"previewDiskSizeGB"`
	Region               string           `yaml:"region"`
	IPAllowList          *[]renderIPAllow `yaml:"ipAllowList"`
	PostgresMajorVersion *yamlString      `yaml:"postgresMajorVersion"`
	DatabaseName         string           `yaml:"databaseName"`
	User                 string           `yaml:"user"`
	ReadReplicas         []struct {
		Name string `yaml:"name"`
	} `yaml:"readReplicas"`
	HighAvailability *struct {
		Enabled bool `yaml:"enabled"`
	} `yaml:"highAvailability"`
}

type renderIPAllow struct {
	Source      string `yaml:"source"`
	Description string `yaml:"description"`
}

// yamlString accepts only a YAML string, not a number that would become
// one: Render documents postgresMajorVersion "as a string".
type yamlString string

func (s *yamlString) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
		return fmt.Errorf("line %d: %q must be a quoted string", n.Line, n.Value)
	}
	*s = yamlString(n.Value)
	return nil
}

func decodeRender(b []byte) (*renderBlueprint, error) {
	var bp renderBlueprint
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&bp); err != nil {
		return nil, fmt.Errorf("render.yaml: %w", err)
	}
	return &bp, nil
}

// Documented values of a database reference's property.
var renderDBProperties = []string{"connectionString", "connectionPoolString", "host", "port", "user", "password", "database"}

// checkRender returns every way bp disagrees with the platform's rules or
// with this repository.
func checkRender(bp *renderBlueprint, r *repoFacts) []string {
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }

	databases := map[string]*renderDatabase{}
	for i := range bp.Databases {
		db := &bp.Databases[i]
		if db.Name == "" {
			bad("databases[%d] has no name", i)
			continue
		}
		if databases[db.Name] != nil {
			bad("database %q is declared twice", db.Name)
		}
		databases[db.Name] = db
		if slices.Contains([]string{"starter", "standard", "pro", "pro plus"}, db.Plan) {
			bad("database %q uses the legacy plan %q, which new databases cannot use", db.Name, db.Plan)
		}
		if db.PostgresMajorVersion != nil {
			if v, err := strconv.Atoi(string(*db.PostgresMajorVersion)); err != nil || v < 13 {
				bad("database %q: postgresMajorVersion %q is not a PostgreSQL major version of 13 or later", db.Name, *db.PostgresMajorVersion)
			}
		}
		if db.IPAllowList == nil {
			bad("database %q has no ipAllowList, so anyone with its credentials may connect from anywhere; use [] for private network only", db.Name)
		}
	}

	var web []*renderService
	for i := range bp.Services {
		if bp.Services[i].Type == "web" {
			web = append(web, &bp.Services[i])
		}
	}
	if len(web) != 1 {
		bad("want exactly one web service, found %d", len(web))
		return errs
	}
	s := web[0]
	if s.Runtime != "docker" {
		bad("service %q: runtime is %q, want docker (built from %s)", s.Name, s.Runtime, r.dockerfile)
	}
	if filepath.Clean(s.DockerfilePath) != r.dockerfile {
		bad("service %q: dockerfilePath %q is not %q", s.Name, s.DockerfilePath, r.dockerfile)
	}
	if filepath.Clean(s.DockerContext) != "." {
		bad("service %q: dockerContext %q must be the repository root, which the Dockerfile copies", s.Name, s.DockerContext)
	}
	if s.StartCommand != "" || s.BuildCommand != "" {
		bad("service %q: startCommand and buildCommand are for native runtimes; a docker service uses dockerCommand", s.Name)
	}
	// Without dockerCommand Render runs the image's own command.
	cmd := r.image.command()
	if s.DockerCommand != "" {
		cmd = strings.Fields(s.DockerCommand)
	}
	errs = append(errs, checkCommand("the service's command", cmd, r)...)
	if !r.getRoutes[s.HealthCheckPath] {
		bad("service %q: healthCheckPath %q is not a GET route the server registers (%s)", s.Name, s.HealthCheckPath, routeList(r.getRoutes))
	}
	if d := s.MaxShutdownDelaySeconds; d == nil || *d < 1 || *d > 300 {
		bad("service %q: maxShutdownDelaySeconds must be set, from 1 to 300", s.Name)
	} else if *d <= longestWait {
		bad("service %q: maxShutdownDelaySeconds %d must exceed the longest tool wait (%d s)", s.Name, *d, longestWait)
	}
	// Reported of Render's validator, though not in the Blueprint reference:
	// the free instance type refuses maxShutdownDelaySeconds.
	if s.Plan == "free" && s.MaxShutdownDelaySeconds != nil {
		bad("service %q: the free plan does not accept maxShutdownDelaySeconds", s.Name)
	}
	if s.Disk != nil {
		bad("service %q: a disk would stop zero-downtime deploys and scaling; ctalk keeps its data in Postgres", s.Name)
	}

	env := map[string]*renderEnvVar{}
	for i := range s.EnvVars {
		v := &s.EnvVars[i]
		if v.FromGroup != "" {
			if v.Key != "" {
				bad("service %q: an envVars entry with fromGroup takes no key", s.Name)
			}
			continue
		}
		if !r.envNames[v.Key] {
			bad("service %q: environment variable %q is not one that ctalk reads (%s)", s.Name, v.Key, strings.Join(sortedKeys(r.envNames), ", "))
		}
		if env[v.Key] != nil {
			bad("service %q: environment variable %q is set twice", s.Name, v.Key)
		}
		env[v.Key] = v
		sources := 0
		for _, set := range []bool{v.Value != nil, v.GenerateValue != nil && *v.GenerateValue, v.Sync != nil && !*v.Sync, v.FromDatabase != nil, v.FromService != nil} {
			if set {
				sources++
			}
		}
		if sources != 1 {
			bad("service %q: environment variable %q needs exactly one of value, generateValue, sync: false, fromDatabase, fromService", s.Name, v.Key)
		}
		if f := v.FromDatabase; f != nil {
			db := databases[f.Name]
			if db == nil {
				bad("service %q: %s refers to database %q, which is not declared under databases", s.Name, v.Key, f.Name)
			} else if regionOf(db.Region) != regionOf(s.Region) {
				bad("service %q and database %q are in different regions; the private network needs one", s.Name, f.Name)
			}
			if !slices.Contains(renderDBProperties, f.Property) {
				bad("service %q: %s uses property %q; want one of %s", s.Name, v.Key, f.Property, strings.Join(renderDBProperties, ", "))
			}
		}
	}
	if u := env["DATABASE_URL"]; u == nil || u.FromDatabase == nil || u.FromDatabase.Property != "connectionString" {
		bad("service %q: DATABASE_URL must come from a declared database's connectionString, or ctalk runs on a throwaway SQLite file", s.Name)
	}
	if a := env["ALLOW_ORG_SIGNUP"]; a != nil && a.Value != nil {
		open, err := strconv.ParseBool(*a.Value)
		if err != nil {
			bad("service %q: ALLOW_ORG_SIGNUP %q is not true or false", s.Name, *a.Value)
		} else if !open && env["SIGNUP_SECRET"] == nil {
			bad("service %q: sign-up is closed and no SIGNUP_SECRET is set, so no organization could ever be created", s.Name)
		}
	}
	if sec := env["SIGNUP_SECRET"]; sec != nil && sec.Value != nil {
		bad("service %q: SIGNUP_SECRET is a secret; generate it (generateValue: true) instead of writing it in the file", s.Name)
	}
	return errs
}

func regionOf(r string) string {
	if r == "" {
		return "oregon"
	}
	return r
}

// ---------------------------------------------------------------------------
// The Dockerfile.

// dockerImage is what the Dockerfile says about the image it builds.
type dockerImage struct {
	buildOutput   string   // the -o of the go build of ./cmd/ctalk
	buildFlags    string   // the whole go build command
	binary        string   // where the final stage puts that output
	entrypoint    []string // exec form
	cmd           []string // exec form
	user          string
	expose        []string
	finalBase     string
	copiedFromOut bool
}

func (img *dockerImage) command() []string {
	return append(slices.Clone(img.entrypoint), img.cmd...)
}

var (
	reGoBuild = regexp.MustCompile(`go build\b[^\n]*`)
	reOutput  = regexp.MustCompile(`\s-o\s+(\S+)`)
)

// parseDockerfile reads the instructions it needs, joining continued lines.
func parseDockerfile(src string) (*dockerImage, error) {
	src = strings.ReplaceAll(src, "\\\n", " ")
	img := &dockerImage{}
	var stages []string // base of each stage
	var stageNames []string
	var copies [][]string // COPY --from lines of the last stage
	for _, line := range strings.Split(src, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		instr, rest, _ := strings.Cut(line, " ")
		rest = strings.TrimSpace(rest)
		switch strings.ToUpper(instr) {
		case "FROM":
			f := strings.Fields(rest)
			stages = append(stages, f[0])
			name := ""
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				name = f[2]
			}
			stageNames = append(stageNames, name)
			copies, img.entrypoint, img.cmd, img.user, img.expose = nil, nil, nil, "", nil
		case "RUN":
			if m := reGoBuild.FindString(rest); m != "" && strings.Contains(m, "./cmd/ctalk") {
				img.buildFlags = rest
				if o := reOutput.FindStringSubmatch(m); o != nil {
					img.buildOutput = o[1]
				}
			}
		case "COPY":
			if strings.Contains(rest, "--from=") {
				copies = append(copies, strings.Fields(rest))
			}
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
	if len(stages) < 2 {
		return nil, fmt.Errorf("want a multi-stage build, found %d stage(s)", len(stages))
	}
	img.finalBase = stages[len(stages)-1]
	for _, c := range copies {
		var args []string
		for _, a := range c {
			if !strings.HasPrefix(a, "--") {
				args = append(args, a)
			}
		}
		if len(args) == 2 && args[0] == img.buildOutput && img.buildOutput != "" {
			img.binary = args[1]
			img.copiedFromOut = slices.Contains(stageNames[:len(stageNames)-1], fromStage(c))
		}
	}
	return img, nil
}

func fromStage(copyArgs []string) string {
	for _, a := range copyArgs {
		if v, ok := strings.CutPrefix(a, "--from="); ok {
			return v
		}
	}
	return ""
}

// checkImage returns every way the image disagrees with what the platforms
// and the server need.
func checkImage(img *dockerImage, r *repoFacts) []string {
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }

	if img.buildOutput == "" {
		bad("no RUN go build ... -o PATH ./cmd/ctalk in the Dockerfile")
	}
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "-s -w", "-X main.version=", "-X main.commit=", "-X main.buildTime="} {
		if !strings.Contains(img.buildFlags, want) {
			bad("the go build lacks %q", want)
		}
	}
	if img.binary == "" || !img.copiedFromOut {
		bad("the final stage does not COPY --from=<build stage> %s", img.buildOutput)
	}
	if len(img.entrypoint) == 0 || img.entrypoint[0] != img.binary {
		bad("ENTRYPOINT %q does not run the binary at %q", img.entrypoint, img.binary)
	}
	errs = append(errs, checkCommand("the image's ENTRYPOINT and CMD", img.command(), r)...)
	if img.user == "" || img.user == "root" || strings.HasPrefix(img.user, "0") || strings.HasPrefix(img.user, "root:") {
		bad("the final stage runs as %q; it must name a non-root USER", img.user)
	}
	if !strings.HasPrefix(img.finalBase, "gcr.io/distroless/static") && img.finalBase != "scratch" {
		bad("the final stage is based on %q; want distroless static or scratch", img.finalBase)
	}
	if !slices.Contains(img.expose, strconv.Itoa(r.defaultPort)) {
		bad("EXPOSE %v does not include the server's default port %d", img.expose, r.defaultPort)
	}
	return errs
}

// checkCommand checks that argv starts the ctalk server as the image holds it.
func checkCommand(what string, argv []string, r *repoFacts) []string {
	if len(argv) == 0 {
		return []string{what + " is empty"}
	}
	var errs []string
	if argv[0] != r.image.binary {
		errs = append(errs, fmt.Sprintf("%s runs %q, but the image puts ctalk at %q", what, argv[0], r.image.binary))
	}
	// "ctalk" alone serves; so does "ctalk serve". Anything else is not a server.
	if len(argv) > 2 || len(argv) == 2 && (argv[1] != "serve" || !r.serveCommand) {
		errs = append(errs, fmt.Sprintf("%s %q does not start the server: use %q or %q", what, strings.Join(argv, " "), r.image.binary, r.image.binary+" serve"))
	}
	return errs
}

// ---------------------------------------------------------------------------
// The scale-out recipe.

func checkNginx(conf string) []string {
	conf = regexp.MustCompile(`#[^\n]*`).ReplaceAllString(conf, "")
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	for _, d := range []string{"proxy_read_timeout", "proxy_send_timeout", "send_timeout"} {
		m := regexp.MustCompile(`(?m)^\s*` + d + `\s+(\d+)s;`).FindStringSubmatch(conf)
		if m == nil {
			bad("nginx.conf: %s is not set in seconds", d)
			continue
		}
		if n, _ := strconv.Atoi(m[1]); n <= longestWait {
			bad("nginx.conf: %s %ss does not exceed the longest tool wait (%d s)", d, m[1], longestWait)
		}
	}
	mcp := regexp.MustCompile(`(?s)location /mcp \{(.*?)\}`).FindStringSubmatch(conf)
	if mcp == nil {
		bad("nginx.conf: no location /mcp block")
		return errs
	}
	for _, want := range []string{"proxy_buffering off;", "gzip off;", "proxy_pass http://ctalk;"} {
		if !strings.Contains(mcp[1], want) {
			bad("nginx.conf: location /mcp lacks %q; event streams must not be buffered or compressed", want)
		}
	}
	for _, sticky := range []string{"ip_hash", "sticky", "hash $"} {
		if strings.Contains(conf, sticky) {
			bad("nginx.conf: %q pins clients to replicas; ctalk needs no sticky sessions", sticky)
		}
	}
	return errs
}

type composeFile struct {
	Services map[string]struct {
		Build *struct {
			Context    string `yaml:"context"`
			Dockerfile string `yaml:"dockerfile"`
		} `yaml:"build"`
		Deploy *struct {
			Replicas int `yaml:"replicas"`
		} `yaml:"deploy"`
		Environment     map[string]string `yaml:"environment"`
		StopGracePeriod string            `yaml:"stop_grace_period"`
	} `yaml:"services"`
}

func checkCompose(c *composeFile, r *repoFacts) []string {
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	svc, ok := c.Services["ctalk"]
	if !ok {
		return []string{"compose.yaml: no ctalk service"}
	}
	// compose.yaml lives in deploy/; its build paths are relative to it.
	if svc.Build == nil || filepath.Join("deploy", svc.Build.Context) != "." ||
		filepath.Join("deploy", svc.Build.Context, svc.Build.Dockerfile) != r.dockerfile {
		bad("compose.yaml: the ctalk service must build %s with the repository root as context", r.dockerfile)
	}
	if svc.Deploy == nil || svc.Deploy.Replicas < 2 {
		bad("compose.yaml: the ctalk service must run at least two replicas")
	}
	if !strings.HasPrefix(svc.Environment["DATABASE_URL"], "postgres://") {
		bad("compose.yaml: replicas must share one Postgres DATABASE_URL")
	}
	for k := range svc.Environment {
		if !r.envNames[k] {
			bad("compose.yaml: environment variable %q is not one that ctalk reads", k)
		}
	}
	if g, err := parseSeconds(svc.StopGracePeriod); err != nil || g <= longestWait {
		bad("compose.yaml: stop_grace_period %q must exceed the longest tool wait (%d s)", svc.StopGracePeriod, longestWait)
	}
	if _, ok := c.Services["nginx"]; !ok {
		bad("compose.yaml: no nginx service in front of the replicas")
	}
	return errs
}

func parseSeconds(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSuffix(s, "s"))
	if err != nil || !strings.HasSuffix(s, "s") {
		return 0, fmt.Errorf("%q is not a number of seconds such as 150s", s)
	}
	return n, nil
}

// ---------------------------------------------------------------------------
// Facts read from the rest of the repository.

type repoFacts struct {
	dockerfile   string          // path of the Dockerfile, from the repository root
	image        *dockerImage    // what it builds
	getRoutes    map[string]bool // paths the server answers to GET
	envNames     map[string]bool // environment variables the server reads
	defaultPort  int
	serveCommand bool // "ctalk serve" is a command
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
	reGET      = regexp.MustCompile(`\be\.(?:GET|Any)\("([^"]+)"`)
	reEnvName  = regexp.MustCompile(`\(\s*"([A-Z][A-Z0-9_]*)"`)
	rePort     = regexp.MustCompile(`\bPort:\s+(\d+),`)
	reServeCmd = regexp.MustCompile(`case [^:\n]*"serve"`)
)

func loadRepo(t *testing.T) *repoFacts {
	t.Helper()
	r := &repoFacts{dockerfile: filepath.Join("deploy", "Dockerfile"), getRoutes: map[string]bool{}, envNames: map[string]bool{}}

	img, err := parseDockerfile(readRepo(t, r.dockerfile))
	if err != nil {
		t.Fatalf("%s: %v", r.dockerfile, err)
	}
	r.image = img

	for _, m := range reGET.FindAllStringSubmatch(readRepo(t, "api/api.go"), -1) {
		r.getRoutes[m[1]] = true
	}
	if len(r.getRoutes) == 0 {
		t.Fatal("found no GET routes in api/api.go")
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

	r.serveCommand = reServeCmd.MatchString(readRepo(t, "cmd/ctalk/main.go"))
	return r
}

func sortedKeys(m map[string]bool) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func routeList(m map[string]bool) string { return strings.Join(sortedKeys(m), ", ") }

func report(t *testing.T, errs []string) {
	t.Helper()
	for _, e := range errs {
		t.Error(e)
	}
}

// ---------------------------------------------------------------------------
// Tests.

// TestLongestWait keeps longestWait honest: the windows above are only long
// enough while no tool may wait longer than it.
func TestLongestWait(t *testing.T) {
	m := regexp.MustCompile(`(?m)^const MaxWait = (\d+) \* time\.Second`).FindStringSubmatch(readRepo(t, "inbox/wait.go"))
	if m == nil {
		t.Fatal("inbox/wait.go no longer declares \"const MaxWait = N * time.Second\"; update this test to read the longest wait")
	}
	if n, _ := strconv.Atoi(m[1]); n > longestWait {
		t.Errorf("inbox.MaxWait is %d s, longer than longestWait (%d s): raise longestWait and every shutdown window and proxy timeout in the deployment files", n, longestWait)
	}
}

func TestDockerfile(t *testing.T) {
	r := loadRepo(t)
	report(t, checkImage(r.image, r))
}

func TestRailway(t *testing.T) {
	r := loadRepo(t)
	c, err := decodeRailway([]byte(readRepo(t, "railway.json")))
	if err != nil {
		t.Fatal(err)
	}
	report(t, checkRailway(c, r))
}

func TestRender(t *testing.T) {
	r := loadRepo(t)
	bp, err := decodeRender([]byte(readRepo(t, "render.yaml")))
	if err != nil {
		t.Fatal(err)
	}
	report(t, checkRender(bp, r))
}

func TestScaleOutRecipe(t *testing.T) {
	r := loadRepo(t)
	report(t, checkNginx(readRepo(t, "deploy/nginx.conf")))
	var c composeFile
	if err := yaml.Unmarshal([]byte(readRepo(t, "deploy/compose.yaml")), &c); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	report(t, checkCompose(&c, r))
}

// TestStrictDecoding shows that a misspelt or undocumented field is refused,
// not silently ignored as the platforms' own loaders might.
func TestStrictDecoding(t *testing.T) {
	railway := readRepo(t, "railway.json")
	render := readRepo(t, "render.yaml")
	tests := []struct {
		name string
		err  func() error
	}{
		{"railway: Render's spelling healthCheckPath", func() error {
			_, err := decodeRailway([]byte(strings.Replace(railway, `"healthcheckPath"`, `"healthCheckPath"`, 1)))
			return err
		}},
		{"railway: drainingSeconds as a string", func() error {
			_, err := decodeRailway([]byte(regexp.MustCompile(`"drainingSeconds": (\d+)`).ReplaceAllString(railway, `"drainingSeconds": "$1"`)))
			return err
		}},
		{"railway: wrong case deep inside", func() error {
			_, err := decodeRailway([]byte(strings.Replace(railway, `"deploy": {`, `"deploy": {"multiRegionConfig": {"us-west2": {"NumReplicas": 2}},`, 1)))
			return err
		}},
		{"railway: trailing second object", func() error {
			_, err := decodeRailway([]byte(railway + "{}"))
			return err
		}},
		{"render: Railway's spelling healthcheckPath", func() error {
			_, err := decodeRender([]byte(strings.Replace(render, "healthCheckPath:", "healthcheckPath:", 1)))
			return err
		}},
		{"render: unknown root field", func() error {
			_, err := decodeRender([]byte(render + "\nservice: []\n"))
			return err
		}},
		{"render: postgresMajorVersion as a number", func() error {
			_, err := decodeRender([]byte(regexp.MustCompile(`postgresMajorVersion: "(\d+)"`).ReplaceAllString(render, "postgresMajorVersion: $1")))
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.err()
			if err == nil {
				t.Fatal("decoded without error")
			}
			t.Log(err)
		})
	}
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

	mustReplace := func(t *testing.T, s, old, new string) string {
		t.Helper()
		if !strings.Contains(s, old) {
			t.Fatalf("the file no longer contains %q; update this test", old)
		}
		return strings.Replace(s, old, new, 1)
	}
	railwayErrs := func(t *testing.T, src string) []string {
		c, err := decodeRailway([]byte(src))
		if err != nil {
			t.Fatal(err)
		}
		return checkRailway(c, r)
	}
	renderErrs := func(t *testing.T, src string) []string {
		bp, err := decodeRender([]byte(src))
		if err != nil {
			t.Fatal(err)
		}
		return checkRender(bp, r)
	}
	imageErrs := func(t *testing.T, src string) []string {
		img, err := parseDockerfile(src)
		if err != nil {
			return []string{err.Error()}
		}
		rr := *r
		rr.image = img
		return checkImage(img, &rr)
	}
	composeErrs := func(t *testing.T, src string) []string {
		var c composeFile
		if err := yaml.Unmarshal([]byte(src), &c); err != nil {
			t.Fatal(err)
		}
		return checkCompose(&c, r)
	}
	noRoutes := *r
	noRoutes.getRoutes = map[string]bool{"/": true}

	tests := []struct {
		name string
		errs func(t *testing.T) []string
		want string // a word the error must contain
	}{
		{"railway: schema", func(t *testing.T) []string {
			return railwayErrs(t, mustReplace(t, railway, "https://railway.com/railway.schema.json", "https://example.com/schema.json"))
		}, "$schema"},
		{"railway: builder", func(t *testing.T) []string {
			return railwayErrs(t, mustReplace(t, railway, `"DOCKERFILE"`, `"RAILPACK"`))
		}, "builder"},
		{"railway: dockerfile path", func(t *testing.T) []string {
			return railwayErrs(t, mustReplace(t, railway, `"deploy/Dockerfile"`, `"Dockerfile"`))
		}, "dockerfilePath"},
		{"railway: start command binary", func(t *testing.T) []string {
			return railwayErrs(t, mustReplace(t, railway, `"/ctalk serve"`, `"/app/ctalk serve"`))
		}, "image puts ctalk"},
		{"railway: start command subcommand", func(t *testing.T) []string {
			return railwayErrs(t, mustReplace(t, railway, `"/ctalk serve"`, `"/ctalk migrate up"`))
		}, "does not start the server"},
		{"railway: start command needs a shell", func(t *testing.T) []string {
			return railwayErrs(t, mustReplace(t, railway, `"/ctalk serve"`, `"/ctalk serve --port $PORT"`))
		}, "exec form"},
		{"railway: health path not served", func(t *testing.T) []string {
			return railwayErrs(t, mustReplace(t, railway, `"/health"`, `"/healthz"`))
		}, "healthcheckPath"},
		{"railway: health path when the route is gone", func(t *testing.T) []string {
			c, err := decodeRailway([]byte(railway))
			if err != nil {
				t.Fatal(err)
			}
			return checkRailway(c, &noRoutes)
		}, "healthcheckPath"},
		{"railway: restart policy", func(t *testing.T) []string {
			return railwayErrs(t, mustReplace(t, railway, `"ON_FAILURE"`, `"SOMETIMES"`))
		}, "restartPolicyType"},
		{"railway: draining shorter than a wait", func(t *testing.T) []string {
			return railwayErrs(t, regexp.MustCompile(`"drainingSeconds": \d+`).ReplaceAllString(railway, `"drainingSeconds": 30`))
		}, "drainingSeconds"},

		{"render: dockerfile path", func(t *testing.T) []string {
			return renderErrs(t, mustReplace(t, render, "dockerfilePath: ./deploy/Dockerfile", "dockerfilePath: ./Dockerfile"))
		}, "dockerfilePath"},
		{"render: docker command binary", func(t *testing.T) []string {
			return renderErrs(t, mustReplace(t, render, "    healthCheckPath:", "    dockerCommand: ctalk serve\n    healthCheckPath:"))
		}, "image puts ctalk"},
		{"render: health path", func(t *testing.T) []string {
			return renderErrs(t, mustReplace(t, render, "healthCheckPath: /health", "healthCheckPath: /status"))
		}, "healthCheckPath"},
		{"render: shutdown delay shorter than a wait", func(t *testing.T) []string {
			return renderErrs(t, regexp.MustCompile(`maxShutdownDelaySeconds: \d+`).ReplaceAllString(render, "maxShutdownDelaySeconds: 60"))
		}, "maxShutdownDelaySeconds"},
		{"render: shutdown delay above Render's limit", func(t *testing.T) []string {
			return renderErrs(t, regexp.MustCompile(`maxShutdownDelaySeconds: \d+`).ReplaceAllString(render, "maxShutdownDelaySeconds: 301"))
		}, "from 1 to 300"},
		{"render: free plan", func(t *testing.T) []string {
			return renderErrs(t, mustReplace(t, render, "plan: starter", "plan: free"))
		}, "free plan"},
		{"render: undeclared database", func(t *testing.T) []string {
			return renderErrs(t, mustReplace(t, render, "  - name: ctalk-db", "  - name: other-db"))
		}, "not declared"},
		{"render: database property", func(t *testing.T) []string {
			return renderErrs(t, mustReplace(t, render, "property: connectionString", "property: url"))
		}, "property"},
		{"render: legacy database plan", func(t *testing.T) []string {
			return renderErrs(t, mustReplace(t, render, "plan: basic-256mb", "plan: starter"))
		}, "legacy"},
		{"render: database open to the internet", func(t *testing.T) []string {
			return renderErrs(t, mustReplace(t, render, "    ipAllowList: []\n", ""))
		}, "ipAllowList"},
		{"render: unknown environment variable", func(t *testing.T) []string {
			return renderErrs(t, mustReplace(t, render, "key: LOG_LEVEL", "key: LOGLEVEL"))
		}, "not one that ctalk reads"},
		{"render: closed sign-up without a secret", func(t *testing.T) []string {
			return renderErrs(t, regexp.MustCompile(`(?m)^\s+- key: SIGNUP_SECRET\n\s+generateValue: true\n`).ReplaceAllString(render, ""))
		}, "SIGNUP_SECRET"},
		{"render: secret written in the file", func(t *testing.T) []string {
			return renderErrs(t, regexp.MustCompile(`(key: SIGNUP_SECRET\n\s+)generateValue: true`).ReplaceAllString(render, "${1}value: hunter2"))
		}, "SIGNUP_SECRET"},

		{"image: binary elsewhere", func(t *testing.T) []string {
			return imageErrs(t, mustReplace(t, dockerfile, `ENTRYPOINT ["/ctalk"]`, `ENTRYPOINT ["/bin/ctalk"]`))
		}, "ENTRYPOINT"},
		{"image: shell form", func(t *testing.T) []string {
			return imageErrs(t, mustReplace(t, dockerfile, `ENTRYPOINT ["/ctalk"]`, `ENTRYPOINT /ctalk`))
		}, "exec"},
		{"image: builds another package", func(t *testing.T) []string {
			return imageErrs(t, mustReplace(t, dockerfile, "./cmd/ctalk", "./cmd/other"))
		}, "go build"},
		{"image: cgo", func(t *testing.T) []string {
			return imageErrs(t, mustReplace(t, dockerfile, "CGO_ENABLED=0", "CGO_ENABLED=1"))
		}, "CGO_ENABLED=0"},
		{"image: root", func(t *testing.T) []string {
			return imageErrs(t, mustReplace(t, dockerfile, "USER nonroot:nonroot", "USER root"))
		}, "non-root"},
		{"image: base with a shell", func(t *testing.T) []string {
			return imageErrs(t, mustReplace(t, dockerfile, "FROM gcr.io/distroless/static-debian12:nonroot", "FROM debian:bookworm-slim"))
		}, "distroless"},
		{"image: port", func(t *testing.T) []string {
			return imageErrs(t, mustReplace(t, dockerfile, "EXPOSE 8080", "EXPOSE 3000"))
		}, "EXPOSE"},

		{"nginx: short read timeout", func(t *testing.T) []string {
			return checkNginx(regexp.MustCompile(`proxy_read_timeout \d+s;`).ReplaceAllString(nginx, "proxy_read_timeout 60s;"))
		}, "proxy_read_timeout"},
		{"nginx: buffering", func(t *testing.T) []string {
			return checkNginx(mustReplace(t, nginx, "proxy_buffering off;", "proxy_buffering on;"))
		}, "buffered"},
		{"nginx: sticky", func(t *testing.T) []string {
			return checkNginx(mustReplace(t, nginx, "zone ctalk 64k;", "zone ctalk 64k;\n        ip_hash;"))
		}, "sticky"},
		{"compose: one replica", func(t *testing.T) []string {
			return composeErrs(t, mustReplace(t, compose, "replicas: 2", "replicas: 1"))
		}, "two replicas"},
		{"compose: short grace period", func(t *testing.T) []string {
			return composeErrs(t, regexp.MustCompile(`stop_grace_period: \d+s`).ReplaceAllString(compose, "stop_grace_period: 10s"))
		}, "stop_grace_period"},
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
// The README must stay true of the code: these tests fail, saying what to
// write, when a variable, command, route or account tool changes. They run
// with the rest of the suite: documentation that no longer matches the code
// is a failure like any other.

func checkReadme(t *testing.T) {
	t.Helper()
}

// readmeSection returns the text of README.md from the heading that starts
// with start up to the next heading of the same or a higher level.
func readmeSection(t *testing.T, readme, start string) string {
	t.Helper()
	i := strings.Index(readme, "\n"+start)
	if i < 0 {
		t.Fatalf("README.md has no heading %q", start)
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
	checkReadme(t)
	r := loadRepo(t)
	table := readmeSection(t, readRepo(t, "README.md"), "## Configuration")
	rows := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([A-Z][A-Z0-9_]*)` \\|").FindAllStringSubmatch(table, -1) {
		rows[m[1]] = true
	}
	for _, name := range sortedKeys(r.envNames) {
		if !rows[name] {
			t.Errorf("cmd/ctalk/config.go reads %s, but README.md's Configuration table has no row for it", name)
		}
	}
	for _, name := range sortedKeys(rows) {
		if !r.envNames[name] {
			t.Errorf("README.md's Configuration table describes %s, which cmd/ctalk/config.go does not read", name)
		}
	}
}

func TestReadmeCommands(t *testing.T) {
	checkReadme(t)
	main := readRepo(t, "cmd/ctalk/main.go")
	usage := regexp.MustCompile("(?s)const usage = `(.*?)`").FindStringSubmatch(main)
	if usage == nil {
		t.Fatal("no usage text in cmd/ctalk/main.go")
	}
	table := readmeSection(t, readRepo(t, "README.md"), "## Commands")
	var n int
	for _, m := range regexp.MustCompile(`(?m)^\s+(ctalk(?: [a-z]+| N)*)\s{2,}`).FindAllStringSubmatch(usage[1], -1) {
		n++
		if !strings.Contains(table, "| `"+m[1]+"` |") {
			t.Errorf("the usage text lists %q, but README.md's Commands table has no row for it", m[1])
		}
	}
	if n < 3 {
		t.Fatalf("found only %d commands in the usage text", n)
	}
}

func TestReadmeEndpoints(t *testing.T) {
	checkReadme(t)
	table := readmeSection(t, readRepo(t, "README.md"), "## HTTP endpoints")
	routes := regexp.MustCompile(`\be\.(?:GET|POST|PUT|DELETE|PATCH|Any)\("([^"]+)"`).FindAllStringSubmatch(readRepo(t, "api/api.go"), -1)
	if len(routes) == 0 {
		t.Fatal("found no routes in api/api.go")
	}
	for _, m := range routes {
		path := regexp.MustCompile(`:([a-z_]+)`).ReplaceAllString(m[1], "{$1}")
		if !strings.Contains(table, "| `"+path+"` |") {
			t.Errorf("api/api.go serves %s, but README.md's HTTP endpoints table has no row for it", path)
		}
	}
}

func TestReadmeTools(t *testing.T) {
	checkReadme(t)
	section := readmeSection(t, readRepo(t, "README.md"), "## Tool reference")
	files, err := filepath.Glob(filepath.Join("..", "api", "*_tools.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("found no api/*_tools.go files (%v)", err)
	}
	tools := map[string]bool{}
	for _, f := range files {
		src := readRepo(t, filepath.Join("api", filepath.Base(f)))
		// Each tool's options run from its NewTool to the next one.
		starts := regexp.MustCompile(`mcp\.NewTool\("([a-z_]+)"`).FindAllStringSubmatchIndex(src, -1)
		for i, st := range starts {
			name := src[st[2]:st[3]]
			tools[name] = true
			end := len(src)
			if i+1 < len(starts) {
				end = starts[i+1][0]
			}
			doc := readmeSection(t, section, "#### `"+name+"`")
			opts := src[st[0]:end]
			args := regexp.MustCompile(`mcp\.With(?:String|Number|Boolean|Any|Array|Object)\("([a-z_]+)"`).FindAllStringSubmatch(opts, -1)
			for param, arg := range map[string]string{"authTokenParam": "auth_token", "messageIDParam": "message_id"} {
				if strings.Contains(opts, param) {
					args = append(args, []string{"", arg})
				}
			}
			for _, a := range args {
				if !strings.Contains(doc, "`"+a[1]+"`") {
					t.Errorf("tool %s takes argument %s, but its README.md entry does not mention it", name, a[1])
				}
			}
		}
	}
	for _, m := range regexp.MustCompile("(?m)^#### `([a-z_]+)`").FindAllStringSubmatch(section, -1) {
		if !tools[m[1]] {
			t.Errorf("README.md describes the tool %s, which no api/*_tools.go file registers", m[1])
		}
	}
}
