package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pi-remote/pi-remote/tools"
)

// Settings are the defaults a user or a project gives pi-remote, from
// ~/.pi-remote/settings.json and, winning over it, .pi-remote/settings.json
// in the directory pi-remote runs in (a project's file sets only what
// projectKeys allows, unless the user trusts the project). Flags override
// both. Every field is optional.
type Settings struct {
	// Model is the default --model (PROVIDER/ID), BaseURL --base-url.
	Model   string `json:"model,omitempty"`
	BaseURL string `json:"baseUrl,omitempty"`
	// Thinking is the default --thinking level.
	Thinking string `json:"thinking,omitempty"`
	// Tools are the default active tools.
	Tools []string `json:"tools,omitempty"`
	// Hosts name host specs: --host NAME uses the spec, and so does NAME
	// in NAME=SPEC lists; an entry may give the host its own permission
	// mode.
	Hosts map[string]HostSetting `json:"hosts,omitempty"`
	// Host is the default --host list (names from Hosts, or specs).
	Host []string `json:"host,omitempty"`
	// Compaction tunes compaction; unset fields keep the defaults.
	Compaction *CompactionSettings `json:"compaction,omitempty"`
	// ReattachTimeout is the default --reattach-timeout ("2m", "30s").
	ReattachTimeout string `json:"reattachTimeout,omitempty"`
	// Models add models to the built-in table or override its entries
	// (keys provider/ID).
	Models map[string]ModelInfo `json:"models,omitempty"`
	// EnabledModels are the default --models: the scoped list the
	// terminal's Ctrl+P cycles through (PROVIDER/ID or ID patterns, "*"
	// for any characters; see ScopeModels).
	EnabledModels []string `json:"enabledModels,omitempty"`
	// TrustedProjects are the directories (absolute, or ~/...) whose own
	// .pi-remote/settings.json may set every key. Only the user's file
	// says this.
	TrustedProjects []string `json:"trustedProjects,omitempty"`
	// Permissions are the session's permission mode and the allow, ask
	// and deny rules.
	Permissions *PermissionSettings `json:"permissions,omitempty"`
	// Hooks are local commands run before and after tool calls, by event
	// (PreToolUse, PostToolUse).
	Hooks map[string][]HookMatcher `json:"hooks,omitempty"`
	// Theme is the terminal's: "auto" (the background asked for, the
	// default), "dark" or "light".
	Theme string `json:"theme,omitempty"`
	// ACPCwdMap maps an editor's directories to directories on a remote
	// default host, for pi-remote acp (see acp.HostCwd).
	ACPCwdMap map[string]string `json:"acpCwdMap,omitempty"`
	// MCPServers are the MCP servers whose tools the agent gets, by
	// name (Claude Code's "mcpServers").
	MCPServers map[string]MCPServer `json:"mcpServers,omitempty"`
}

// LoadedSettings are the settings in force and what the project's file
// asked for that was left out.
type LoadedSettings struct {
	Settings
	// UserFile and ProjectFile are the files read ("" when there is none;
	// the project's is none when it is the user's own, as in the home
	// directory).
	UserFile, ProjectFile string
	// ProjectDir is the real path (symbolic links resolved) of the
	// directory the project's file belongs to.
	ProjectDir string
	// Trusted says whether the user trusts ProjectDir (--trust-project,
	// or trustedProjects), whether or not it has a settings file: its
	// prompt templates are used only then.
	Trusted bool
	// Refused says why the project's file (ProjectFile) was not read at
	// all: another user could have written it (see projectFileRefusal).
	Refused string
	// Ignored are the keys of the project's file that were not applied,
	// in projectKeys order.
	Ignored []IgnoredKey
	// MCPFrom says where each server of MCPServers was configured.
	MCPFrom map[string]MCPOrigin
	// MCPFile is the project's .mcp.json, when there is one.
	MCPFile string
	// MCPUntrusted are the servers the project configured (in MCPFile or
	// ProjectFile) that are not started, as the user does not trust the
	// project; MCPRefused says why MCPFile was not read at all.
	MCPUntrusted []string
	MCPRefused   string

	user        Settings // the user's own file's
	userPath    string   // where the user's file is, or would be
	projectMode bool     // the project's file set the permission mode
	// mcpFile are the servers of a trusted project's .mcp.json;
	// mcpFileUntrusted the names of an untrusted one's.
	mcpFile          map[string]MCPServer
	mcpFileUntrusted []string
}

// IgnoredKey is a key of a project's settings that was not applied.
type IgnoredKey struct {
	Key string
	Why string // what the key could do, in words for the user
	// UserOnly says that trusting the project would not apply it either:
	// only the user's own file may set the key.
	UserOnly bool
}

// LoadSettings reads the user's settings (home/.pi-remote/settings.json)
// and the project's (projectDir/.pi-remote/settings.json) and merges them,
// the project's over the user's field by field (maps key by key). Unless
// the user trusts projectDir — trustProject (the --trust-project flag), or
// its real path in the user's TrustedProjects — the project's file sets
// only the keys projectKeys allows an untrusted project; the rest are
// listed in Ignored. A file that is not valid is an error naming the file
// and the line; a missing file is none.
func LoadSettings(home, projectDir string, trustProject bool) (LoadedSettings, error) {
	l := LoadedSettings{UserFile: SettingsFile(home)}
	user, found, err := readSettingsFile(l.UserFile)
	if err != nil {
		return LoadedSettings{}, err
	}
	l.userPath = l.UserFile
	if !found {
		l.UserFile = ""
	}
	l.Settings, l.user = user, user
	l.ProjectDir = realPath(projectDir)
	l.Trusted = trustProject || user.trusts(home, l.ProjectDir)
	l.MCPFrom = map[string]MCPOrigin{}
	for name := range user.MCPServers {
		l.MCPFrom[name] = MCPOrigin{File: l.UserFile}
	}
	if err := l.readMCPFile(projectDir, l.Trusted); err != nil {
		return LoadedSettings{}, err
	}
	projectFile := SettingsFile(projectDir)
	if sameFile(projectFile, SettingsFile(home)) {
		return l, nil // the user's own file, run in the home directory
	}
	project, found, refused, err := readProjectSettings(projectFile)
	if err != nil || !found {
		return l, err
	}
	l.ProjectFile = projectFile
	if refused != "" {
		l.Refused = refused
		return l, nil
	}
	if l.Trusted {
		for name := range project.MCPServers {
			l.MCPFrom[name] = MCPOrigin{File: projectFile, Project: true}
		}
	} else {
		for name := range project.MCPServers {
			l.MCPUntrusted = append(l.MCPUntrusted, name)
		}
		slices.Sort(l.MCPUntrusted)
		l.MCPUntrusted = slices.Compact(l.MCPUntrusted)
	}
	if !l.Trusted && project.Tools != nil {
		// An untrusted project's list narrows the tools to those of it the
		// user allows; those the user leaves off are left out, and said.
		var kept, off []string
		for _, t := range project.Tools {
			if userAllowsTool(user, t) {
				kept = append(kept, t)
			} else {
				off = append(off, t)
			}
		}
		if len(off) > 0 {
			project.Tools = append([]string{}, kept...)
			l.Ignored = append(l.Ignored, IgnoredKey{Key: "tools " + strings.Join(off, ", "),
				Why: "your settings (or the defaults) leave them off; the project's other tools are the session's"})
		}
	}
	for _, k := range projectKeys() {
		if !k.set(project) || (l.Trusted && !k.UserOnly) || (!l.Trusted && k.Untrusted != nil && k.Untrusted(user, project)) {
			continue
		}
		k.clear(&project)
		l.Ignored = append(l.Ignored, IgnoredKey{Key: k.Key, Why: k.Why, UserOnly: k.UserOnly})
	}
	l.Settings = user.over(project)
	// (.mcp.json's servers are below the project's settings file's.)
	l.Settings.MCPServers = mergeMap(mergeMap(user.MCPServers, l.mcpFile), project.MCPServers)
	l.projectMode = project.Permissions != nil && project.Permissions.Mode != ""
	return l, nil
}

// userAllowsTool says whether the user's settings (or the defaults, when
// they have no "tools") allow tool. Without a "tools" of the user's, every
// MCP tool is active.
func userAllowsTool(u Settings, tool string) bool {
	if u.Tools == nil {
		return slices.Contains(defaultTools(), tool) || strings.HasPrefix(tool, "mcp__")
	}
	return slices.Contains(u.Tools, tool)
}

// projectKey is what a project's settings file may do with one key.
type projectKey struct {
	Key string // as it is spelled in the file
	// Untrusted says whether a project the user has not trusted may set
	// the key to what project sets it to, over the user's settings. Nil:
	// it may not.
	Untrusted func(user, project Settings) bool
	// UserOnly keys are never taken from a project, trusted or not.
	UserOnly bool
	// Why says what the key could do that needs the user's trust.
	Why string

	set   func(Settings) bool // whether the file sets the key
	clear func(*Settings)     // unsets the key
}

// projectKeys say, for every settings key, whether a repository's own
// .pi-remote/settings.json may set it without the user's trust. A project
// may choose how the agent works within what the user has set up; it may
// not choose where credentials go, which machines pi-remote logs in to,
// what runs, or widen what the user allowed. (A key added to Settings
// gets its line here; a test holds every key to that.)
func projectKeys() []projectKey {
	always := func(user, project Settings) bool { return true }
	return []projectKey{
		{
			Key: "model",
			// A scripted model replays tool calls from a file: commands the
			// repository wrote would run with no model choosing them. Other
			// providers get the user's own key at the provider's own
			// address (baseUrl is the user's to say).
			Untrusted: func(_, p Settings) bool { return !strings.HasPrefix(p.Model, "scripted/") },
			Why:       "a scripted/FILE model replays tool calls from a file, so the project would choose the commands that run",
			set:       func(s Settings) bool { return s.Model != "" },
			clear:     func(s *Settings) { s.Model = "" },
		},
		{
			Key: "baseUrl",
			Why: "it says where model requests go, and they carry your API key",
			set: func(s Settings) bool { return s.BaseURL != "" }, clear: func(s *Settings) { s.BaseURL = "" },
		},
		{
			Key: "thinking", Untrusted: always,
			set: func(s Settings) bool { return s.Thinking != "" }, clear: func(s *Settings) { s.Thinking = "" },
		},
		{
			Key: "tools",
			// Narrowing the tool set is a project's to ask; widening what
			// the user (or the default) allows is not.
			// (LoadSettings has left out of an untrusted project's list
			// the tools the user does not allow.)
			Untrusted: func(u, p Settings) bool {
				for _, t := range p.Tools {
					if !userAllowsTool(u, t) {
						return false
					}
				}
				return true
			},
			Why: "it turns on tools that your settings (or the defaults) leave off",
			set: func(s Settings) bool { return s.Tools != nil }, clear: func(s *Settings) { s.Tools = nil },
		},
		{
			Key: "hosts",
			Why: "it says which machine a host name reaches, and pi-remote logs in there with your SSH keys",
			set: func(s Settings) bool { return s.Hosts != nil }, clear: func(s *Settings) { s.Hosts = nil },
		},
		{
			Key: "host",
			Why: "it chooses the machines pi-remote logs in to with your SSH keys and runs commands on",
			set: func(s Settings) bool { return s.Host != nil }, clear: func(s *Settings) { s.Host = nil },
		},
		{
			Key: "compaction", Untrusted: always,
			set: func(s Settings) bool { return s.Compaction != nil }, clear: func(s *Settings) { s.Compaction = nil },
		},
		{
			Key: "theme", Untrusted: always,
			set: func(s Settings) bool { return s.Theme != "" }, clear: func(s *Settings) { s.Theme = "" },
		},
		{
			Key: "reattachTimeout", Untrusted: always,
			set: func(s Settings) bool { return s.ReattachTimeout != "" }, clear: func(s *Settings) { s.ReattachTimeout = "" },
		},
		{
			Key: "models",
			// Describing a model nobody else describes (a local one) is
			// harmless; changing the window or price of one the user or
			// the built-in table describes would misreport cost and
			// context.
			Untrusted: func(u, p Settings) bool {
				known := u.ModelTable()
				for name := range p.Models {
					if known.Lookup(name).Known {
						return false
					}
				}
				return true
			},
			Why: "it changes the context window or price of a model your settings or the built-in table describe",
			set: func(s Settings) bool { return s.Models != nil }, clear: func(s *Settings) { s.Models = nil },
		},
		{
			Key: "enabledModels",
			// The list only orders and narrows the choice among models the
			// user can reach with their own keys, at the providers' own
			// addresses; a scripted model would replay tool calls the
			// repository wrote, so only the user may name one.
			Untrusted: func(_, p Settings) bool {
				return !slices.ContainsFunc(p.EnabledModels, func(m string) bool {
					return strings.HasPrefix(strings.ToLower(m), "scripted/")
				})
			},
			Why:   "it names a scripted/FILE model, which replays tool calls from a file: the project would choose the commands that run",
			set:   func(s Settings) bool { return s.EnabledModels != nil },
			clear: func(s *Settings) { s.EnabledModels = nil },
		},
		{
			Key: "permissions.mode",
			// A stricter mode is a restriction, which a project may add.
			Untrusted: func(u, p Settings) bool { return strictness(p.permissionMode()) >= strictness(u.permissionMode()) },
			Why:       "it sets a permission mode less strict than yours",
			set:       func(s Settings) bool { return s.Permissions != nil && s.Permissions.Mode != "" },
			clear:     func(s *Settings) { s.Permissions.Mode = "" },
		},
		{
			Key:   "permissions.allow",
			Why:   "allow rules let calls run without asking you",
			set:   func(s Settings) bool { return s.Permissions != nil && len(s.Permissions.Allow) > 0 },
			clear: func(s *Settings) { s.Permissions.Allow = nil },
		},
		{
			Key: "permissions.ask", Untrusted: always,
			set:   func(s Settings) bool { return s.Permissions != nil && len(s.Permissions.Ask) > 0 },
			clear: func(s *Settings) { s.Permissions.Ask = nil },
		},
		{
			Key: "permissions.deny", Untrusted: always,
			set:   func(s Settings) bool { return s.Permissions != nil && len(s.Permissions.Deny) > 0 },
			clear: func(s *Settings) { s.Permissions.Deny = nil },
		},
		{
			Key:   "hooks",
			Why:   "hooks are commands that run on this machine and may rewrite tool calls",
			set:   func(s Settings) bool { return len(s.Hooks) > 0 },
			clear: func(s *Settings) { s.Hooks = nil },
		},
		{
			Key: "acpCwdMap",
			Why: "it chooses the directory on your hosts where the agent acts",
			set: func(s Settings) bool { return s.ACPCwdMap != nil }, clear: func(s *Settings) { s.ACPCwdMap = nil },
		},
		{
			Key: "mcpServers",
			Why: "MCP servers are programs pi-remote starts on your machine (or services it sends the configured headers to)",
			set: func(s Settings) bool { return len(s.MCPServers) > 0 }, clear: func(s *Settings) { s.MCPServers = nil },
		},
		{
			Key: "trustedProjects", UserOnly: true,
			Why: "only your own settings can trust a project",
			set: func(s Settings) bool { return s.TrustedProjects != nil }, clear: func(s *Settings) { s.TrustedProjects = nil },
		},
	}
}

// defaultTools are the tools active when nothing says which: the
// tools package's DefaultActive.
func defaultTools() []string { return slices.Clone(tools.DefaultActive) }

// trusts says whether s (the user's settings) trusts the project in dir
// (a real path).
func (s Settings) trusts(home, dir string) bool {
	for _, t := range s.TrustedProjects {
		if rest, ok := strings.CutPrefix(t, "~/"); ok {
			t = filepath.Join(home, rest)
		}
		if realPath(t) == dir {
			return true
		}
	}
	return false
}

// realPath is p with symbolic links resolved, or p cleaned when it cannot
// be resolved (it does not exist).
func realPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		p = r
	}
	if a, err := filepath.Abs(p); err == nil {
		p = a
	}
	return filepath.Clean(p)
}

// SettingsFile is the settings file of dir: a home directory (the user's
// settings) or a project's.
func SettingsFile(dir string) string {
	return filepath.Join(dir, ".pi-remote", "settings.json")
}

// sameFile says whether a and b both exist and are one file.
func sameFile(a, b string) bool {
	ai, err := os.Stat(a)
	if err != nil {
		return false
	}
	bi, err := os.Stat(b)
	return err == nil && os.SameFile(ai, bi)
}

// ProjectFileRefusal says why a file of a project's .pi-remote directory
// (open as f, with its info fi) is not to be read, or "" when only the
// user or root could have written it: the rules of the project's
// settings file.
func ProjectFileRefusal(f *os.File, fi fs.FileInfo) string { return projectFileRefusal(f, fi) }

// readSettingsFile reads one settings file; found is false when it does
// not exist.
func readSettingsFile(p string) (s Settings, found bool, err error) {
	s, found, _, err = readSettings(p, false)
	return s, found, err
}

// readProjectSettings reads a project's settings file, unless another
// user could have written it: then refused says why, and nothing is read.
func readProjectSettings(p string) (s Settings, found bool, refused string, err error) {
	return readSettings(p, true)
}

func readSettings(p string, project bool) (s Settings, found bool, refused string, err error) {
	// Not blocking on a FIFO: a file that is not regular is an error.
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return Settings{}, false, "", nil
	}
	if err != nil {
		return Settings{}, false, "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Settings{}, false, "", err
	}
	if project {
		if refused := projectFileRefusal(f, fi); refused != "" {
			return Settings{}, true, refused, nil
		}
	}
	if !fi.Mode().IsRegular() {
		return Settings{}, false, "", fmt.Errorf("%s: not a regular file", p)
	}
	data, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return Settings{}, false, "", err
	}
	s, err = parseSettings(data)
	if err != nil {
		return Settings{}, false, "", fmt.Errorf("%s:%v", p, err)
	}
	return s, true, "", nil
}

// lineError is an error at a line of a settings file.
type lineError struct {
	line int
	err  error
}

func (e *lineError) Error() string { return fmt.Sprintf("%d: %v", e.line, e.err) }

func parseSettings(data []byte) (Settings, error) {
	var s Settings
	if len(bytes.TrimSpace(data)) == 0 {
		return s, nil // an empty file sets nothing
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(&s); err != nil {
		var typ *json.UnmarshalTypeError
		if errors.As(err, &typ) && typ.Field == "models" && typ.Value == "array" {
			// (Pi's "models" list is our "enabledModels": "models" is
			// the model table.)
			err = errors.New(`models: want an object of model descriptions; the list of models Ctrl+P cycles through is "enabledModels"`)
			return Settings{}, &lineError{line: lineAt(data, typ.Offset), err: err}
		}
		return Settings{}, &lineError{line: errorLine(data, err), err: err}
	}
	if d.More() {
		return Settings{}, &lineError{line: lineAt(data, d.InputOffset()), err: errors.New("more than one JSON value")}
	}
	if key, err := s.validate(); err != nil {
		line := 1
		if i := bytes.Index(data, []byte(strconv.Quote(key))); i >= 0 {
			line = lineAt(data, int64(i)+1)
		}
		return Settings{}, &lineError{line: line, err: err}
	}
	return s, nil
}

// errorLine finds the line a decoding error is about.
func errorLine(data []byte, err error) int {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return lineAt(data, syntax.Offset)
	case errors.As(err, &typ):
		return lineAt(data, typ.Offset)
	}
	// Unknown field: the decoder says its name, not where.
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		if i := bytes.Index(data, []byte(name)); i >= 0 {
			return lineAt(data, int64(i)+1)
		}
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return lineAt(data, int64(len(bytes.TrimRight(data, " \t\r\n"))))
	}
	return 1
}

// lineAt is the line (from 1) of the byte before offset: where a JSON
// error's offset (the bytes read when it was found) points.
func lineAt(data []byte, offset int64) int {
	offset = min(max(offset, 0), int64(len(data)))
	return bytes.Count(data[:offset], []byte("\n")) + 1
}

// validate checks the values JSON cannot; on error it says which key
// (for the line) and why.
func (s Settings) validate() (string, error) {
	switch s.Theme {
	case "", "auto", "dark", "light":
	default:
		return "theme", fmt.Errorf("theme %q: want auto, dark or light", s.Theme)
	}
	if s.Thinking != "" && !validThinking(s.Thinking) {
		return "thinking", fmt.Errorf("thinking %q: want off, low, medium or high", s.Thinking)
	}
	for _, m := range s.EnabledModels {
		if strings.TrimSpace(m) == "" || strings.Contains(m, ",") {
			return "enabledModels", fmt.Errorf("enabledModels: %q: want PROVIDER/ID or ID (\"*\" for any characters)", m)
		}
	}
	if s.ReattachTimeout != "" {
		if _, err := time.ParseDuration(s.ReattachTimeout); err != nil {
			return "reattachTimeout", fmt.Errorf("reattachTimeout: %v", err)
		}
	}
	if c := s.Compaction; c != nil && (c.ReserveTokens < 0 || c.KeepRecentTokens < 0) {
		return "compaction", errors.New("compaction: token counts must not be negative")
	}
	for _, t := range s.TrustedProjects {
		if !filepath.IsAbs(t) && !strings.HasPrefix(t, "~/") {
			return "trustedProjects", fmt.Errorf("trustedProjects: %q: want an absolute path (or ~/...)", t)
		}
	}
	if key, err := s.validatePolicy(); err != nil {
		return key, err
	}
	if key, err := validateMCP(s.MCPServers); err != nil {
		return key, err
	}
	for name, m := range s.Models {
		if !strings.Contains(name, "/") {
			return name, fmt.Errorf("models: %q: want PROVIDER/ID", name)
		}
		if err := m.Validate(); err != nil {
			return name, fmt.Errorf("models: %s: %v", name, err)
		}
	}
	return "", nil
}

// over is o applied over s.
func (s Settings) over(o Settings) Settings {
	pick := func(a, b string) string {
		if b != "" {
			return b
		}
		return a
	}
	s.Model, s.BaseURL, s.Thinking, s.ReattachTimeout = pick(s.Model, o.Model), pick(s.BaseURL, o.BaseURL), pick(s.Thinking, o.Thinking), pick(s.ReattachTimeout, o.ReattachTimeout)
	s.Theme = pick(s.Theme, o.Theme)
	if o.Tools != nil {
		s.Tools = o.Tools
	}
	if o.Host != nil {
		s.Host = o.Host
	}
	if o.EnabledModels != nil {
		s.EnabledModels = o.EnabledModels
	}
	s.Hosts = mergeMap(s.Hosts, o.Hosts)
	s.Models = mergeMap(s.Models, o.Models)
	s.ACPCwdMap = mergeMap(s.ACPCwdMap, o.ACPCwdMap)
	s.MCPServers = mergeMap(s.MCPServers, o.MCPServers)
	if o.Compaction != nil {
		c := CompactionSettings{}
		if s.Compaction != nil {
			c = *s.Compaction
		}
		c.Off = o.Compaction.Off
		if o.Compaction.ReserveTokens > 0 {
			c.ReserveTokens = o.Compaction.ReserveTokens
		}
		if o.Compaction.KeepRecentTokens > 0 {
			c.KeepRecentTokens = o.Compaction.KeepRecentTokens
		}
		s.Compaction = &c
	}
	return s.overPolicy(o)
}

func mergeMap[V any](a, b map[string]V) map[string]V {
	if len(b) == 0 {
		return a
	}
	out := map[string]V{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// ModelTable is the built-in table with the settings' models over it.
func (s Settings) ModelTable() Models {
	m := BuiltinModels()
	for k, v := range s.Models {
		m[k] = v
	}
	return m
}

// ThinkingLevels are the --thinking values.
var ThinkingLevels = []string{"off", "low", "medium", "high"}

func validThinking(level string) bool {
	for _, l := range ThinkingLevels {
		if l == level {
			return true
		}
	}
	return false
}
