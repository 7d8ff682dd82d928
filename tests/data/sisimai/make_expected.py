import re, subprocess, csv, sys
G = "/work/.mirror/sisimai+go-sisimai/repo"
S = "/work/.mirror/sisimai+set-of-emails/repo"
def git(d,*a): return subprocess.run(["git","--git-dir",d,*a],capture_output=True,text=True).stdout
files = [f for f in git(G,"ls-tree","--name-only","HEAD","fact/").split() if "-lhost-" in f]
have = set(x.split("/")[-1] for x in git(S,"ls-tree","--name-only","HEAD","maildir/bsd/").split())
rows = []
# go-sisimai names two engines differently from their sample files
RENAMED = {"mailmarshalsmtp": "mailmarshal", "interscanmss": "trendmicro"}
missing = []
for f in files:
    src = git(G,"show","HEAD:"+f)
    m = re.search(r'publiclist := \[\]\[\]IsExpected\{(.*?)\n\t\}[;\s]*EngineTest\(t, "(\w+)", publiclist, true\)', src, re.S)
    if not m: print("no public", f, file=sys.stderr); continue
    body, engine = m.groups()
    for e in re.finditer(r'\{"(\w+)",\s*(\d+),\s*"([^"]*)",\s*"([^"]*)",\s*"(\w*)",\s*(true|false),\s*"([^"]*)"\}', body):
        label, idx, status, code, reason, hard, other = e.groups()
        name = f"lhost-{RENAMED.get(engine.lower(), engine.lower())}-{label}.eml"
        if name not in have: missing.append(name); continue
        rows.append((name, idx, status, code, reason, hard))
w = csv.writer(sys.stdout, lineterminator="\n")
w.writerow(("file","index","status","reply_code","reason","hard_bounce"))
w.writerows(rows)
print("missing", len(set(missing)), sorted(set(missing))[:20], file=sys.stderr)
print("files", len(set(r[0] for r in rows)), "rows", len(rows), "have", len([h for h in have if h.startswith("lhost-")]), file=sys.stderr)
print("not in table", sorted(h for h in have if h.startswith("lhost-") and h not in set(r[0] for r in rows)), file=sys.stderr)
