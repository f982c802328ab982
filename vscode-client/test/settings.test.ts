import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import type { InitializationOptions, SettingsProblem } from '../src/protocol';
import {
    explicit, flowerPart, initializationOptions, keyLine, type Option, OPTIONS, redactUrls, resumeOnStartup, SERVER_SETTINGS, SETTINGS_FILES,
    settingsFix, sharedStore,
} from '../src/model/settings';

/** The options sent for these settings (absent ones unset). */
function sent(set: Partial<Record<Option, unknown>>): InitializationOptions {
    return initializationOptions((option) => set[option]);
}

test('settings become the server options protocol.md lists', () => {
    assert.deepEqual(sent({ rounds: 4, trim: false, handoffAt: 90_000 }), { rounds: 4, trim: false, handoffAt: 90_000 });
});

test('every value the person set goes to the server as it is, valid or not: the server is the one to check it', () => {
    const bad = { rounds: 0, trim: 'yes', handoffAt: 1.5, model: 42, fallbackModel: ['x'], maxCost: -3, isolated: 'no', store: {}, project: ' p ' };
    assert.deepEqual(sent(bad), bad);
    assert.deepEqual(sent({ model: '', maxCost: null }), { model: '', maxCost: null }, 'an empty value too: the server says what it means');
});

test('resumeOnStartup falls back to ask', () => {
    assert.equal(resumeOnStartup('always'), 'always');
    assert.equal(resumeOnStartup('never'), 'never');
    assert.equal(resumeOnStartup('sometimes'), 'ask');
    assert.equal(resumeOnStartup(undefined), 'ask');
});

test('every server option has its setting, contributed in package.json, and a change restarts the server', () => {
    const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { contributes: { configuration: { properties: Record<string, { scope?: string }> } } };
    const contributed = Object.keys(pkg.contributes.configuration.properties);
    assert.deepEqual(SERVER_SETTINGS.filter((k) => !contributed.includes(k)), []);
    const all = initializationOptions(() => 1);
    assert.deepEqual(Object.keys(all), OPTIONS);
    assert.deepEqual(SERVER_SETTINGS, ['flower.python', ...OPTIONS.map((o) => `flower.${o}`)]);
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
    assert.deepEqual(initializationOptions(() => explicit({})), {});
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

const PROBLEM: SettingsProblem = { message: 'flower.rounds: rounds must be a whole number >= 1, e.g. rounds = 10 (got 0)', key: 'rounds', option: 'rounds', file: null };

test("Open Settings on the server's settings error opens the setting where the value came from", () => {
    assert.deepEqual(settingsFix(PROBLEM, { globalValue: 0 }, false), { kind: 'setting', id: 'flower.rounds', scope: 'user' });
    assert.deepEqual(settingsFix(PROBLEM, { globalValue: 3, workspaceValue: 0 }, false), { kind: 'setting', id: 'flower.rounds', scope: 'workspace' });
    // A single folder's settings are its workspace's; only a multi-root workspace has folder settings of its own.
    assert.deepEqual(settingsFix(PROBLEM, { workspaceFolderValue: 0 }, false), { kind: 'setting', id: 'flower.rounds', scope: 'workspace' });
    assert.deepEqual(settingsFix(PROBLEM, { workspaceValue: 3, workspaceFolderValue: 0 }, true), { kind: 'setting', id: 'flower.rounds', scope: 'folder' });
    assert.deepEqual(settingsFix(PROBLEM, { globalValue: 0, workspaceValue: null }, false), { kind: 'setting', id: 'flower.rounds', scope: 'user' }, 'null is unset, as for explicit');
});

test('Open Settings opens the settings file when it is the source, and nothing for a variable', () => {
    const file = { ...PROBLEM, option: null, file: '/home/me/app/.flower.toml', message: '/home/me/app/.flower.toml: rounds must be …' };
    assert.deepEqual(settingsFix(file, undefined, false), { kind: 'file', path: '/home/me/app/.flower.toml', key: 'rounds' });
    assert.equal(settingsFix({ ...PROBLEM, option: null, message: '$FLOWER_ROUNDS: rounds must be …' }, undefined, false), null);
});

test("the file opens at the key's line: in pyproject.toml only inside [tool.flower]", () => {
    assert.equal(keyLine('.flower.toml', 'model = "m"\n  rounds = "many"\n', 'rounds'), 1);
    assert.equal(keyLine('.flower.toml', 'roundsx = 1\n"rounds"=2\n', 'rounds'), 1);
    assert.equal(keyLine('.flower.toml', 'model = "m"\n', 'rounds'), 0, 'not there (unreadable TOML): the top');
    const pyproject = '[project]\nrounds = 1\n\n[tool.flower]\nmodel = "m"\nrounds = 0\n[tool.ruff]\nrounds = 2\n';
    assert.equal(keyLine('pyproject.toml', pyproject, 'rounds'), 5);
    assert.equal(keyLine('.flower.toml', 'a = 1\n', '(the file)'), 0);
});
