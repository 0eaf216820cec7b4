package agent

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Notice tells the user what of the project's settings file was not used
// and why ("" when everything was): the whole file, refused (Refused); or
// its ignored keys, and how to trust the project when that would apply
// them.
func (l LoadedSettings) Notice() string {
	var b strings.Builder
	b.WriteString(l.mcpNotice())
	if l.Refused != "" {
		fmt.Fprintf(&b, "pi-remote: not using the settings in %s: %s\n", l.ProjectFile, l.Refused)
	}
	if len(l.Ignored) == 0 {
		return b.String()
	}
	if l.Trusted {
		fmt.Fprintf(&b, "pi-remote: ignoring settings in %s:\n", l.ProjectFile)
	} else {
		fmt.Fprintf(&b, "pi-remote: ignoring settings in %s, as you have not trusted the project %s:\n", l.ProjectFile, l.ProjectDir)
	}
	trustable := false
	for _, k := range l.Ignored {
		fmt.Fprintf(&b, "  %s: %s\n", k.Key, k.Why)
		trustable = trustable || !k.UserOnly
	}
	if trustable {
		user := l.userPath // (the user's file, made if missing)
		if user == "" {
			user = l.UserFile
		}
		fmt.Fprintf(&b, "To use them, trust the project: add %s to \"trustedProjects\" in %s, or pass --trust-project for one run.\n", jsonString(l.ProjectDir), user)
	}
	return b.String()
}

// jsonString is s as a JSON string, to paste into a settings file.
func jsonString(s string) string {
	b, err := json.Marshal(s)
	if err != nil { // not for a string; Quote is close enough
		return strconv.Quote(s)
	}
	return string(b)
}
