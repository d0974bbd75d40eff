#!/bin/bash
set -uxo pipefail
source /opt/miniconda3/bin/activate
conda activate testbed
cd /testbed
export STRKIT_LOCALE=C
git config --global --add safe.directory /testbed
cd /testbed
git status
git show
git -c core.fileMode=false diff ccc022747d2a86d330aa399596e994f41d8f1468
source /opt/miniconda3/bin/activate
conda activate testbed
git checkout ccc022747d2a86d330aa399596e994f41d8f1468 tests/unit/test_config.py tests/unit/test_slug.py
git apply -v - <<'EOF_114329324912'
diff --git a/tests/unit/test_config.py b/tests/unit/test_config.py
index cb50a6e..458ca5d 100644
--- a/tests/unit/test_config.py
+++ b/tests/unit/test_config.py
@@ -4,3 +4,8 @@ from strkit import config
 def test_locale_comes_from_the_environment():
     # The project's CI (and so the eval script) runs the tests with STRKIT_LOCALE=C.
     assert config.locale() == "C"
+
+
+def test_empty_locale_falls_back_to_default(monkeypatch):
+    monkeypatch.setenv("STRKIT_LOCALE", "")
+    assert config.locale() == config.DEFAULT_LOCALE
diff --git a/tests/unit/test_slug.py b/tests/unit/test_slug.py
index b0a9bb3..220d948 100644
--- a/tests/unit/test_slug.py
+++ b/tests/unit/test_slug.py
@@ -8,6 +8,9 @@ from strkit import slugify
         ("python", "python"),
         ("snake_case", "snake-case"),
         ("CamelCase", "camelcase"),
+        ("Hello,World!", "hello-world"),
+        ("--leading", "leading"),
+        ("a...b", "a-b"),
     ],
 )
 def test_slug(text, expected):
@@ -20,3 +23,7 @@ def test_custom_separator():
 
 def test_non_ascii_is_transliterated():
     assert slugify("Caf\u00e9") == "cafe"
+
+
+def test_separator_runs_collapse():
+    assert slugify("one -- two", sep="_") == "one_two"

EOF_114329324912
: '>>>>> Start Test Output'
pytest -rA tests/unit/test_config.py tests/unit/test_slug.py
: '>>>>> End Test Output'
git checkout ccc022747d2a86d330aa399596e994f41d8f1468 tests/unit/test_config.py tests/unit/test_slug.py
