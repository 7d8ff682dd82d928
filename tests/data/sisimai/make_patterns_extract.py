import re, subprocess, json
G = "/work/.mirror/sisimai+go-sisimai/repo"
def show(p): return subprocess.run(["git","--git-dir",G+"/.git" if False else G,"show","HEAD:"+p],capture_output=True,text=True).stdout
files = subprocess.run(["git","--git-dir",G,"ls-tree","--name-only","HEAD","reason/"],capture_output=True,text=True).stdout.split()
out = {}
for f in files:
    if "why-" not in f: continue
    src = show(f)
    m = re.search(r'IncludedIn\["(\w+)"\]\s*=\s*func\(argv1 string\) bool \{(.*?)\n\t\}', src, re.S)
    if not m: continue
    name, body = m.group(1).lower(), m.group(2)
    d = {}
    for var in ("index", "pairs", "isnot"):
        mm = re.search(var + r' := \[\](\[\])?string\{(.*?)\n\t\t\}', body, re.S) or re.search(var + r' := \[\](\[\])?string\{(.*?)\}\n', body, re.S)
        if not mm: continue
        if mm.group(1):
            d[var] = [re.findall(r'"((?:[^"\\]|\\.)*)"', x) for x in re.findall(r'\{([^{}]*)\}', mm.group(2))]
        else:
            d[var] = re.findall(r'"((?:[^"\\]|\\.)*)"', mm.group(2))
    out[name] = d
print(json.dumps({k:{kk:len(vv) for kk,vv in v.items()} for k,v in out.items()}))
json.dump(out, open("/tmp/b1/patterns.json","w"), indent=0, ensure_ascii=False)
