const words = require("fs").readFileSync(0, "utf8").split(/\s+/).filter(Boolean);
const groups = new Map();
for (const w of words) {
  const key = [...w].sort().join("");
  if (!groups.has(key)) groups.set(key, []);
  groups.get(key).push(w);
}
for (const g of groups.values()) console.log(g.sort().join(" "));
