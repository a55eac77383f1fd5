package redlock

import (
	"regexp"
	"strings"
	"testing"

	"github.com/redlock-go/redlock/internal/transport"
)

// Every script a form runs for acquire, extend, release and cleanup answers
// its common case before it makes any helper (a local function): the
// helpers of the rarer paths cost nothing where they are not needed. The
// semaphore's slot() (permit.lua) and a set's one() (eachKeyScript) are no
// helpers but the wrapped script itself, and are skipped. (No Redis
// needed: it reads the sources.)
func TestScriptsCommonCaseFirst(t *testing.T) {
	helper := regexp.MustCompile(`(?m)^\s*local function (\w+)`)
	ret := regexp.MustCompile(`(?m)^\s*return\b`)
	for name, s := range map[string]*transport.Script{
		"acquire plain": acquirePlainScript, "acquire meta": acquireMetaScript,
		"extend plain": extendPlainScript, "extend meta": extendMetaScript,
		"release plain": releasePlainScript, "release meta": releaseMetaScript,
		"cleanup plain": cleanupPlainScript, "cleanup meta": cleanupMetaScript,
		"hold acquire": holdAcquireScript, "hold extend": holdExtendScript, "hold release": holdReleaseScript,
		"slot acquire": slotAcquireScript, "slot meta acquire": slotMetaAcquireScript,
		"slot extend": slotExtendScript, "slot meta extend": slotMetaExtendScript,
		"slot release": slotReleaseScript, "slot meta release": slotMetaReleaseScript,
		"slot cleanup": slotCleanupScript, "slot meta cleanup": slotMetaCleanupScript,
		"shared acquire": sharedAcquireScript, "shared extend": sharedExtendScript, "shared release": sharedReleaseScript,
		"set acquire": multiAcquireScript, "set extend": multiExtendScript, "set release": multiReleaseScript,
		"set cleanup": multiCleanupScript,
	} {
		src := s.Source()
		first := -1
		for _, m := range helper.FindAllStringSubmatchIndex(src, -1) {
			if name := src[m[2]:m[3]]; name != "slot" && name != "one" {
				first = m[0]
				break
			}
		}
		r := ret.FindStringIndex(src)
		if r == nil {
			t.Errorf("%s: no return statement", name)
			continue
		}
		if first >= 0 && first < r[0] {
			line := strings.Count(src[:first], "\n") + 1
			t.Errorf("%s: a helper is made at line %d, before the first return at line %d: the common case must come first",
				name, line, strings.Count(src[:r[0]], "\n")+1)
		}
	}
}
