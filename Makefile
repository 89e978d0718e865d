# Developer shortcuts; the README's two commands are `bash dev.sh demo` and `bash dev.sh test`.
PY := .venv/bin/python
BUNDLED := kuka_iiwa14 franka_panda schunk_lwa4p planar2 ur5 biorob4

.PHONY: demo test generated check-generated

demo:
	bash dev.sh demo

test:
	bash dev.sh test

# Regenerate the committed generated/ folders of the bundled robots.
generated:
	@for r in $(BUNDLED); do .venv/bin/manipgen generate $$r --out generated/$$r >/dev/null || exit 1; done

# Fail if the committed generated/ differs from a fresh generation.
check-generated:
	@$(PY) -m host_tools.cli.check_generated $(BUNDLED)
