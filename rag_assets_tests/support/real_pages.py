"""Excerpts of real documentation pages with fenced code inside list items, quotes and <Tabs>, kept
verbatim (issue 34, item 7): what the splitter and chunker must keep intact.

Sources, each permissively licensed, copied unchanged except that an excerpt starts and ends at a
section boundary:

- typescript-eslint/typescript-eslint (MIT License, Copyright (c) 2019 typescript-eslint and other
  contributors), commit 56c9ed90d0aee0b5a71cfc39fc76b715b82e3ea8:
  - DEPENDENCY_UPGRADES: docs/maintenance/pull-requests/Dependency_Version_Upgrades.mdx, lines 108-145
  - PROJECT_SERVICE_ERRORS: docs/troubleshooting/typed-linting/index.mdx, lines 171-195
  - DEFINE_CONFIG_TABS: docs/packages/TypeScript_ESLint.mdx, lines 288-352, after the page's own two
    import lines and a heading
- ionic-team/capacitor-docs (Apache License 2.0), commit b5f9b9aed2f30b99baf5c8d856a929edb71a5b03:
  - CORDOVA_QUOTE: docs/plugins/cordova.md, lines 12-36
"""

from __future__ import annotations

DEPENDENCY_UPGRADES = r"""#### Adding Support for a New TypeScript Version

We generally start the process of supporting a new TypeScript version just after the first beta release for that version is made available.

1. Create and pin an issue with a title like _TypeScript X.Y Support_, `accepting prs`, `AST`, `dependencies`, and `New TypeScript Version` labels, and the following contents:
   1. A link to the _TypeScript X.Y Iteration Plan_ issue from the Microsoft issue tracker
   2. The following text:

      ```md
      This issue is just to track all of the new features and their implementation state in this project.
      As with all releases, we will not necessarily support all features until closer to the full release when everything the features are stabilized.

      _Please be patient._ ❤️
      ```

   3. A heading starting with `🔲 ` for each new TypeScript feature called out in the iteration plan that will impact us
   4. A heading titled _🔲 `lib.d.ts` Updates_ and the content _We will need to regenerate our types within `scope-manager`_
   5. A heading titled _Other changes with no impact to us_ containing a list of other changes that we don't believe will impact us

1. At this stage, it's fine to send and/or review PRs that implement necessary features, but wait to merge them until the new TypeScript version's RC is released
   - Whenever a PR is created, add ` (#1234)` to its respective heading, and change the heading's emoji from 🔲 to 🏗
   - Search for `expectBabelToNotSupport` to see how to support syntaxes not yet supported by Babel
1. Once the TypeScript RC version is released, start merging PRs
   - Whenever a PR is merged, change the respective heading's emoji from 🏗 to ✅
1. Create a PR with a title like `feat: update TypeScript to X.Y-rc` and the following changes:
   - In the root `package.json`, add `|| X.Y.1-rc2` to the `devDependency` on `typescript`
   - In the parser's `getLib`, update the `switch (target)` and its preceding comment as needed (see [#6782](https://github.com/typescript-eslint/typescript-eslint/pull/6782))
   - Change the `SUPPORTED_TYPESCRIPT_VERSIONS` constant's `<` version to the next version of TypeScript
   - Change the `SUPPORTED_PRERELEASE_RANGES` constant to equal `['X.Y.1-rc']`
   - Run `pnpm run generate-lib` to update `scope-manager`
1. Once all PRs needed for the RC update PR are merged, merge the RC update PR
1. Once TypeScript releases the stable X.Y version, create and merge a PR with a title like `chore: bump TypeScript from X.YRC to X.Y` and the following changes:
   - In the root `package.json`, remove `|| X.Y.1-rc2` from the `dependency` on `typescript`, and bump its `<` version to the next version of TypeScript
   - In the root `package.json`, change the `resolutions` on `typescript` to `X.Y.3`
   - Any other changes made necessary due to changes in TypeScript between the RC version and stable version
1. Send a PR that updates this documentation page to point to your newer issues and PRs
   - Also update any of these steps if you go with a different process

"""

PROJECT_SERVICE_ERRORS = r"""### I get errors telling me "... was not found by the project service. Consider either including it in the tsconfig.json or including it in allowDefaultProject"

These errors are caused by attempting to use the project service to lint a file not explicitly included in its nearest `tsconfig.json`.

The project service will attempt to build type information for each file being linted using the nearest `tsconfig.json` on disk to that file.
If that `tsconfig.json` does not include the file, and the file isn't allowlisted in [`allowDefaultProject`](../../packages/parser#allowdefaultproject), then the project service will throw this error.

For each file being reported:

- If you **do not** want to lint the file:
  - Use [one of the options ESLint offers to ignore files](https://eslint.org/docs/latest/user-guide/configuring/ignoring-code), such an `ignores` config key.
- If you **do** want to lint the file:
  - If you **do not** want to lint the file with [type-aware linting](../../getting-started/Typed_Linting.mdx): [disable type-checked linting for that file](#how-do-i-disable-type-checked-linting-for-a-file).
  - If you **do** want to lint the file with [type-aware linting](../../getting-started/Typed_Linting.mdx):
    1. If possible, add the file to the closest `tsconfig.json`'s `include`. For example, allowing `.js` files:
       ```diff title="tsconfig.json"
       "include": [
         "src",
       + "*.js"
       ]
       ```
    2. Otherwise, if you have a small number of "out of project" files, try setting [`projectService.allowDefaultProject`](../../packages/parser#allowdefaultproject).
    3. If not, you can switch to [`parserOptions.project`](../../packages/Parser.mdx#project) for more fine-grained control of projects.

Note also:
"""

DEFINE_CONFIG_TABS = r"""import Tabs from '@theme/Tabs';
import TabItem from '@theme/TabItem';

## Comparing the two helpers

{/* prettier-ignore */}
1. Overriding `files` in `extends`.
   When `files` is provided in both a base object and an extension, `tseslint.config(...)` _overrides_ the `files` property in the extension, whereas `defineConfig(...)` semantically intersects the two provided `files` specifiers.
   <Tabs>
    <TabItem value="tseslint.config(...)">

      ```ts title="eslint.config.mjs"
      import tseslint from 'typescript-eslint';

      export default tseslint.config({
        files: ['a.ts'],
        extends: [
          {
            files: ['b.ts'],
            rules: {
              'some-rule': 'error',
            },
          },
        ],
      });

      // is equivalent to

      export default {
        files: ['a.ts'],
        rules: { 'some-rule': 'error' },
      };
      ```

    </TabItem>
    <TabItem value="defineConfig(...)">

      ```ts title="eslint.config.mjs"
      import { defineConfig } from 'eslint/config';

      export default defineConfig({
        files: ['a.ts'],
        extends: [
          {
            files: ['b.ts'],
            rules: {
              'some-rule': 'error',
            },
          },
        ],
      });

      // is equivalent to

      // The base config technically ensures that 'a.ts' is still included in
      // the lint run, but otherwise the config has no effect, due to the
      // intersection of 'a.ts' and 'b.ts' being empty.
      export default {
        files: ['a.ts'],
      };
      ```

    </TabItem>
   </Tabs>

2. Type declarations (only applies to users who typecheck their eslint configs).
   There are slight differences in the way types are declared between the two functions, which may cause typechecking errors when you switch from `tseslint.config(...)` to `defineConfig(...)` in some cases (see [#10899](https://github.com/typescript-eslint/typescript-eslint/issues/10899) for an example that used to impact typescript-eslint's own configs).
   Type errors such as these do not indicate a runtime problem and can safely be ignored.

### Manual usage
"""

CORDOVA_QUOTE = r"""## Installing Cordova Plugins

Capacitor plugins are installed using your regular package manager and then synced to the native project(s). The installation process is the same for Cordova plugins in Capacitor.

Install the plugin, sync, and then finish any required native project configuration (see [Variables and Hooks](/plugins/cordova.md#variables-and-hooks)):

```bash
npm install cordova-plugin-name
npx cap sync
```

> If the Cordova plugin has an [`@awesome-cordova-plugins`](https://ionicframework.com/docs/native) wrapper, you can also install it for TypeScript support:
>
> ```bash
> npm install @awesome-cordova-plugins/plugin-name
> ```

## Updating Cordova Plugins

Use your regular package manager to update plugins. Then, sync the updated plugin to the native project(s):

```bash
npm install cordova-plugin-name@version
npx cap sync
```
"""

PAGES = {
    "maintenance/Dependency_Version_Upgrades.mdx": DEPENDENCY_UPGRADES,
    "troubleshooting/typed-linting.mdx": PROJECT_SERVICE_ERRORS,
    "packages/TypeScript_ESLint.mdx": DEFINE_CONFIG_TABS,
    "plugins/cordova.md": CORDOVA_QUOTE,
}
