from blog.models import Author, Post
from testdbd.django import CommittingTestCase, RollbackTestCase


class Committing(CommittingTestCase):
    def test_create(self):
        a = Author.objects.create(email="new@example.com")
        self.assertEqual(a.id, 2)  # the template's next id, every time
        Post.objects.create(author=a, title="Hello")

    def test_create_again(self):
        self.test_create()

    def test_template_is_back(self):
        self.assertEqual(Author.objects.count(), 1)
        self.assertEqual(Post.objects.count(), 0)


class InTransactions(RollbackTestCase):
    def test_create(self):
        self.assertEqual(Author.objects.count(), 1)
        Author.objects.create(email="tx@example.com")

    def test_seeded(self):
        self.assertTrue(Author.objects.filter(email="ada@example.com").exists())


class AfterTransactions(CommittingTestCase):
    def test_counter_rewound(self):
        self.assertEqual(Author.objects.create(email="z@example.com").id, 2)
