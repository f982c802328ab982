import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { APPROVAL_SETTINGS, explicit, flowerPart, initializationOptions, redactUrls, resumeOnStartup, SERVER_SETTINGS, SETTINGS_FILES, sharedStore } from '../src/model/settings';

test('settings become the server options protocol.md lists', () => {
    assert.deepEqual(initializationOptions({ rounds: 4, trim: false, handoffAt: 90_000 }), { rounds: 4, trim: false, handoffAt: 90_000 });
});

test('an unset handoffAt is left to the server default (60 % of the window)', () => {
    assert.deepEqual(initializationOptions({ rounds: 10, trim: true, handoffAt: null }), { rounds: 10, trim: true });
});

test('invalid values are dropped, never sent', () => {
    assert.deepEqual(initializationOptions({ rounds: 0, trim: 'yes', handoffAt: 1.5 }), {});
    assert.deepEqual(initializationOptions({ rounds: '3', trim: undefined, handoffAt: -1 }), {});
});

test('resumeOnStartup falls back to ask', () => {
    assert.equal(resumeOnStartup('always'), 'always');
    assert.equal(resumeOnStartup('never'), 'never');
    assert.equal(resumeOnStartup('sometimes'), 'ask');
    assert.equal(resumeOnStartup(undefined), 'ask');
});

const BASE = { rounds: 10, trim: true, handoffAt: null };

test('model, fallback model, cap, isolation, store and project become server options (issue 15)', () => {
    const url = 'postgresql://flower:s3cret@db.example:5432/flower';
    assert.deepEqual(
        initializationOptions({ ...BASE, model: ' claude-sonnet-4-5 ', fallbackModel: 'claude-haiku-4-5', maxCost: 20, isolated: true, store: url, project: 'calc' }),
        { rounds: 10, trim: true, model: 'claude-sonnet-4-5', fallbackModel: 'claude-haiku-4-5', maxCost: 20, isolated: true, store: url, project: 'calc' },
    );
    assert.deepEqual(initializationOptions({ ...BASE, maxCost: 0.5, isolated: false, store: 'sqlite' }), { rounds: 10, trim: true, maxCost: 0.5, isolated: false, store: 'sqlite' });
});

test('empty settings are left to the server: no model, no cap (an empty maxCost is null)', () => {
    assert.deepEqual(initializationOptions({ ...BASE, model: '', fallbackModel: '   ', maxCost: null, isolated: undefined, store: '', project: '' }), { rounds: 10, trim: true });
});

test('a cap of 0 or less, or not a number, is no cap; wrong types are dropped', () => {
    for (const maxCost of [0, -3, '20', Number.NaN, Number.POSITIVE_INFINITY]) {
        assert.equal(initializationOptions({ ...BASE, maxCost }).maxCost, undefined, String(maxCost));
    }
    assert.deepEqual(initializationOptions({ ...BASE, model: 42, fallbackModel: ['x'], isolated: 'yes', store: {}, project: 7 }), { rounds: 10, trim: true });
});

test('every server option has its setting, contributed in package.json, and a change restarts the server', () => {
    const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { contributes: { configuration: { properties: Record<string, { scope?: string }> } } };
    const contributed = Object.keys(pkg.contributes.configuration.properties);
    assert.deepEqual(SERVER_SETTINGS.filter((k) => !contributed.includes(k)), []);
    const all = initializationOptions({
        rounds: 1, trim: true, handoffAt: 1000, model: 'm', fallbackModel: 'f', maxCost: 1, isolated: true, store: 's', project: 'p',
    });
    assert.deepEqual(Object.keys(all).map((k) => `flower.${k}`).filter((k) => !(SERVER_SETTINGS as readonly string[]).includes(k)), []);
    // A URL with a password belongs to the user, never to workspace settings that may be committed; not
    // `machine`: a remote window (code-server) then ignores the user's value, seen after Reload Window.
    assert.equal(pkg.contributes.configuration.properties['flower.store'].scope, 'application');
});

test("a store URL's password is masked in log lines, the rest is kept", () => {
    const line = '{"initializationOptions":{"store":"postgresql://flower:s3cr@t!@db:5432/flower","project":"calc"}}';
    const masked = redactUrls(line);
    assert.equal(masked, '{"initializationOptions":{"store":"postgresql://flower:***@db:5432/flower","project":"calc"}}');
    assert.ok(!masked.includes('s3cr'));
    assert.equal(redactUrls('store postgres://me:pw@h/db and http://127.0.0.1:8080/x'), 'store postgres://me:***@h/db and http://127.0.0.1:8080/x');
    assert.equal(redactUrls('store sqlite'), 'store sqlite');
});

test('only what the person set is sent: a default would outrank .flower.toml and the environment', () => {
    assert.equal(explicit({ globalValue: undefined, workspaceValue: undefined }), undefined);
    assert.equal(explicit(undefined), undefined);
    assert.equal(explicit({ globalValue: 5 }), 5);
    assert.equal(explicit({ globalValue: 5, workspaceValue: 3 }), 3);
    assert.equal(explicit({ globalValue: 5, workspaceValue: 3, workspaceFolderValue: 2 }), 2);
    assert.equal(explicit({ globalValue: true, workspaceValue: false }), false, 'false is a value, not "unset"');
    // Nothing set anywhere: no option at all, so the server's settings file decides.
    const none = { rounds: explicit({}), trim: explicit({}), handoffAt: explicit({}), isolated: explicit({}), store: explicit({}) };
    assert.deepEqual(initializationOptions(none), {});
});

test('the settings files: all of .flower.toml, only the [tool.flower] tables of pyproject.toml', () => {
    assert.deepEqual([...SETTINGS_FILES], ['.flower.toml', 'pyproject.toml']);
    assert.equal(flowerPart('.flower.toml', 'model = "m"\n'), 'model = "m"\n');
    assert.equal(flowerPart('.flower.toml', undefined), '');
    const pyproject = (deps: string, model: string) =>
        `[project]\nname = "app"\ndependencies = [${deps}]\n\n[tool.flower]\nmodel = "${model}"\n[tool.flower.extra]\nx = 1\n[tool.ruff]\nline-length = 120\n`;
    const part = flowerPart('pyproject.toml', pyproject('"a"', 'm'));
    assert.equal(part, '[tool.flower]\nmodel = "m"\n[tool.flower.extra]\nx = 1');
    assert.equal(flowerPart('pyproject.toml', pyproject('"a", "b"', 'm')), part, 'a dependency edit changes nothing');
    assert.notEqual(flowerPart('pyproject.toml', pyproject('"a"', 'n')), part, 'a model edit does');
    assert.equal(flowerPart('pyproject.toml', '[ tool."flower" ]\nrounds = 2'), '[ tool."flower" ]\nrounds = 2');
    assert.equal(flowerPart('pyproject.toml', '[tool.flowerpot]\nx = 1\n[project]\n'), '');
});

test('a postgresql:// store, in the setting or else in FLOWER_STORE, is shared: the folder may have a task without runs/lineage.json (issue 14)', () => {
    const url = 'postgresql://flower:s3cret@db.example:5432/flower';
    assert.equal(sharedStore(url, undefined), true);
    assert.equal(sharedStore(` ${url} `, undefined), true);
    assert.equal(sharedStore(undefined, url), true);
    assert.equal(sharedStore('', url), true);
    // The setting wins over the environment, as option > environment on the server.
    assert.equal(sharedStore('sqlite', url), false);
    assert.equal(sharedStore(undefined, undefined), false);
    assert.equal(sharedStore('sqlite', undefined), false);
    assert.equal(sharedStore(undefined, 'sqlite'), false);
    assert.equal(sharedStore(42, undefined), false);
    assert.equal(sharedStore('postgres://db/flower', undefined), true, 'the short scheme too, as the server takes it');
});

test('the approval settings go to the server as the person set them (it checks them), unset ones not at all', () => {
    const set = { allow: ['Read', 'Bash(npm test:*)'], mode: 'default', approvalsWait: 600, approvalsUnattended: 'wait' };
    assert.deepEqual(initializationOptions({ ...BASE, ...set }), { rounds: 10, trim: true, ...set });
    assert.deepEqual(initializationOptions({ ...BASE, allow: undefined, mode: undefined }), { rounds: 10, trim: true });
    assert.deepEqual(initializationOptions({ ...BASE, allow: 'Read', approvalsWait: -1 }), { rounds: 10, trim: true, allow: 'Read', approvalsWait: -1 }, 'passed through: the server says what is wrong');
    const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { contributes: { configuration: { properties: Record<string, { scope?: string; default?: unknown }> } } };
    const props = pkg.contributes.configuration.properties;
    for (const [option, setting] of Object.entries(APPROVAL_SETTINGS)) {
        assert.equal(props[`flower.${setting}`]?.scope, 'machine-overridable', setting);
        assert.ok((SERVER_SETTINGS as readonly string[]).includes(`flower.${setting}`), `${option}: a change restarts the server`);
    }
    assert.equal(props['flower.mode'].default, 'acceptEdits', 'never bypassPermissions unless the person writes it');
    assert.equal(props['flower.notify'].default, 'off');
});
